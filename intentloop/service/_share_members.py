"""``intentloop share members``: who may write to a shared project, and what this installation made of each writer.

Every principal with its keys: where the key comes from (the checkout's ``.intentloop/allowed_signers`` or a local
``share trust``), whether it is an admin, its window, the last sequence number accepted from it and its status, with
why; then the writers whose keys nobody listed (with the principal their checkpoint claims) and the lines of the
files that do not count. It reads the checkout, the trust store and what the last sync recorded (``peers.json``,
the view's index): no git, no network, nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from intentloop.service._share import require_shared
from intentloop.service._share_sync import REVOKED_WHY, PeerState, load_peers, record_time
from intentloop.service._share_view import read_view
from intentloop.store._share import TrustedKey, trusted_keys
from intentloop.store._signers import allowed_signers_path, in_window, read_team, revoked_signers_path, trust_from
from intentloop.store._signing import load_signing_key
from intentloop.store._stream import parse_openssh_public_key, ssh_fingerprint


def _status(key: TrustedKey, state: PeerState, problem: dict[str, Any] | None, now: str) -> tuple[str, str | None]:
    if state.frozen is not None:
        return "frozen", f"{state.frozen} (sequence {state.frozen_seq}); the last good state is kept"
    if not in_window(now, key):
        window = f"from {key.valid_after or 'any time'} until {key.valid_before or 'any time'}"
        return "out_of_window", f"the key is valid {window} (UTC): records it dates outside that are ignored"
    if problem is not None:
        why = f"the last sync set its stream aside: {problem.get('problem')} (sequence {problem.get('problem_seq')})"
        return "set_aside", f"{why}; the last good state (sequence {state.seq}) is kept"
    if state.seq:
        return "accepted", None
    return "pending", "no stream of this key has been accepted yet (not synced since, or nothing published)"


def _key_entry(key_id: str, public_key: str, **fields: Any) -> dict[str, Any]:
    raw = parse_openssh_public_key(public_key)
    return {
        "key_id": key_id,
        "short": key_id[:12],
        "fingerprint": ssh_fingerprint(raw) if raw is not None else None,
        **fields,
    }


def members(data_root: Path, raw: str | None) -> dict[str, Any]:
    """The answer of ``share members``: ``{shared_id, project_root, allowed_signers, revoked_signers, members:
    [{principal, admin, keys: [...]}], unknown: [...], problems: [...]}``.

    Raises:
        ConflictError: ``SHARE_NOT_INITIALIZED``.
    """
    located, identity = require_shared(data_root, raw)
    shared = identity.shared_id
    team = read_team(located.root)
    local = {k.key_id: k for k in trusted_keys(data_root)}
    trusted, conflicts = trust_from(team, local.values())
    peers = load_peers(data_root, shared)
    view = read_view(data_root, shared, items=False)
    set_aside = {p["writer"]: p for p in (view.problems if view else []) if p.get("status") in ("tampered", "rollback")}
    own = load_signing_key(data_root)
    now = record_time()
    by_principal: dict[str, list[dict[str, Any]]] = {}
    for key_id, key in sorted(trusted.items()):
        state = peers.get(key_id, PeerState())
        status: str
        why: str | None
        if own is not None and key_id == own.key_id:
            status, why = "own", "this installation's key"
        else:
            status, why = _status(key, state, set_aside.get(key_id), now)
        entry = _key_entry(
            key_id,
            key.public_key,
            source=key.source,
            admin=key.admin,
            valid_after=key.valid_after,
            valid_before=key.valid_before,
            seq=state.seq,
            status=status,
            why=why,
        )
        if state.claimed is not None:
            entry["principal_claimed"] = state.claimed
        by_principal.setdefault(key.principal, []).append(entry)
    listed = {s.key_id: s for s in team.signers}
    for key_id, public_key in sorted(team.revoked.items()):
        holder = listed.get(key_id) or local.get(key_id)
        principal = holder.principal if holder is not None else "(unlisted)"
        source = "allowed_signers" if key_id in listed else "local" if key_id in local else "revoked_signers"
        seq = peers.get(key_id, PeerState()).seq
        entry = _key_entry(
            key_id,
            public_key,
            source=source,
            admin=False,
            valid_after=None,
            valid_before=None,
            seq=seq,
            status="revoked",
            why=REVOKED_WHY,
        )
        by_principal.setdefault(principal, []).append(entry)
    unknown = [
        {**u, "short": str(u.get("writer", ""))[:12]}
        for u in (view.unknown if view else [])
        if u.get("writer") not in trusted and u.get("writer") not in team.revoked
    ]
    return {
        "shared_id": shared,
        "project_root": located.root,
        "allowed_signers": str(allowed_signers_path(located.root)),
        "revoked_signers": str(revoked_signers_path(located.root)),
        "members": [
            {"principal": principal, "admin": any(k.get("admin") for k in keys), "keys": keys}
            for principal, keys in sorted(by_principal.items())
        ],
        "unknown": unknown,
        "problems": [{"file": p.file, "line": p.line, "why": p.why} for p in [*team.problems, *conflicts]],
    }


__all__ = ["members"]
