"""Sharing a project's memory through git: the operations behind ``intentloop share …`` and ``intentloop sync``.

A shared project is a local project whose root holds ``.intentloop/project.json`` (``share init``) or that this
installation bound to a shared id (``share join``); nothing of it travels until a remote is set
(``share remote URL``) and ``intentloop sync`` runs. What travels, the stream format, trust and the threat model are
in docs/SYNC.md; this module resolves the project, keeps the settings and assembles the answers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from intentloop.errors import ConflictError, IntentLoopError, InvalidInputError
from intentloop.model.projection import TaskState
from intentloop.store import ProjectRoot, ProjectStore, locate_project
from intentloop.store._share import (
    SharedIdentity,
    TrustedKey,
    check_principal,
    check_shared_id,
    new_shared_id,
    note_local,
    read_binding,
    read_principal,
    read_project_file,
    read_settings,
    shared_identity,
    trust_key,
    write_binding,
    write_principal,
    write_project_file,
    write_settings,
)

if TYPE_CHECKING:
    from intentloop.service._share_view import Folded, PeerClaim


def locate(data_root: Path, raw: str | None) -> tuple[ProjectRoot, SharedIdentity | None]:
    """The project of ``raw`` (default: the working directory) and its shared identity, if any. Creates nothing."""
    located = locate_project(raw if raw is not None else os.getcwd(), data_root)
    return located, shared_identity(data_root, located.root, located.project_id)


def require_shared(data_root: Path, raw: str | None) -> tuple[ProjectRoot, SharedIdentity]:
    """As :func:`locate`, refused with ``SHARE_NOT_INITIALIZED`` when the project is not shared."""
    located, identity = locate(data_root, raw)
    if identity is None:
        raise ConflictError(
            f"{located.root} is not a shared project: run `intentloop share init` (or `share join ID`)",
            code="SHARE_NOT_INITIALIZED",
        )
    return located, identity


def init(data_root: Path, raw: str | None) -> dict[str, Any]:
    """Give the project a shared id in ``.intentloop/project.json`` (kept when it has one; a bound id is reused)."""
    located, identity = locate(data_root, raw)
    created = False
    if identity is None or identity.source == "binding":
        shared = identity.shared_id if identity is not None else new_shared_id()
        write_project_file(located.root, shared)
        created = True
    else:
        shared = identity.shared_id
    note_local(data_root, shared, located.project_id)
    return {
        "shared_id": shared,
        "created": created,
        "file": str(Path(located.root, ".intentloop", "project.json")),
        "project_root": located.root,
        "project_id": located.project_id,
    }


def join(data_root: Path, raw: str | None, shared_id: str) -> dict[str, Any]:
    """Bind a checkout that cannot carry the file to ``shared_id`` (its local id and ledger stay as they are)."""
    shared = check_shared_id(shared_id.strip().lower())
    located = locate_project(raw if raw is not None else os.getcwd(), data_root)
    carried = read_project_file(located.root)
    bound = read_binding(data_root, located.project_id)
    for other in (carried, bound):
        if other is not None and other != shared:
            raise ConflictError(f"this checkout is already shared as {other}", code="SHARE_ALREADY_BOUND")
    if bound is None and carried is None:
        write_binding(data_root, located.project_id, shared)
    note_local(data_root, shared, located.project_id)
    return {"shared_id": shared, "project_root": located.root, "project_id": located.project_id}


def set_remote(data_root: Path, raw: str | None, url: str) -> dict[str, Any]:
    if not url or url.startswith("-") or any(ch.isspace() for ch in url):
        raise InvalidInputError("a remote is one git URL (e.g. git@host:me/memory.git or file:///path/repo.git)")
    located, identity = require_shared(data_root, raw)
    settings = note_local(data_root, identity.shared_id, located.project_id)
    settings.remote = url
    write_settings(data_root, identity.shared_id, settings)
    return {"shared_id": identity.shared_id, "remote": url}


SYNC_EVERY_MIN_S = 10
SYNC_EVERY_MAX_S = 86_400


def set_auto_sync(data_root: Path, raw: str | None, every_s: int | None) -> dict[str, Any]:
    """Let a running MCP server sync the project every ``every_s`` seconds (``None``: never; only ``intentloop sync``).

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` outside 10 s … 1 day.
        ConflictError: ``SHARE_NOT_INITIALIZED`` (not shared).
    """
    if every_s is not None and not SYNC_EVERY_MIN_S <= every_s <= SYNC_EVERY_MAX_S:
        raise InvalidInputError(f"auto-sync runs every {SYNC_EVERY_MIN_S} s to 1 day (86400 s), or is off")
    located, identity = require_shared(data_root, raw)
    settings = note_local(data_root, identity.shared_id, located.project_id)
    settings.sync_every_s = every_s
    write_settings(data_root, identity.shared_id, settings)
    return {"shared_id": identity.shared_id, "remote": settings.remote, "sync_every_s": every_s}


def publish(data_root: Path, raw: str | None, task_id: str | None, *, inferences: bool | None) -> dict[str, Any]:
    """Publish a task (its explicit and evidence claims of every scope, its label) and/or opt inferences in or out."""
    from intentloop.service._rules import check_uuid

    located, identity = require_shared(data_root, raw)
    settings = note_local(data_root, identity.shared_id, located.project_id)
    if task_id is not None:
        task = check_uuid(task_id, "task_id")
        found = ProjectStore(data_root, located.project_id).task(task)
        if found is None or not found.started:
            raise IntentLoopError("no such task in this project", code="TASK_NOT_FOUND")
        if task not in settings.tasks:
            settings.tasks.append(task)
    if inferences is not None:
        settings.inferences = inferences
    write_settings(data_root, identity.shared_id, settings)
    return {"shared_id": identity.shared_id, "tasks": settings.tasks, "inferences": settings.inferences}


def principal_of(data_root: Path, root: str) -> str | None:
    """This installation's principal: ``share principal NAME``, else ``git config user.email`` in the project."""
    chosen = read_principal(data_root)
    if chosen is not None:
        return chosen
    try:
        done = subprocess.run(["git", "-C", root, "config", "user.email"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    email = done.stdout.decode("utf-8", "replace").strip()
    return email or None


def set_principal(data_root: Path, name: str) -> dict[str, Any]:
    write_principal(data_root, name)
    return {"principal": name}


def keys(data_root: Path, raw: str | None) -> dict[str, Any]:
    from intentloop.store._signers import allowed_signers_line
    from intentloop.store._signing import load_or_create_signing_key
    from intentloop.store._stream import openssh_public_key, ssh_fingerprint

    located = locate_project(raw if raw is not None else os.getcwd(), data_root)
    key = load_or_create_signing_key(data_root)
    public_key = openssh_public_key(key.public_hex)
    principal = principal_of(data_root, located.root)
    return {
        "key_id": key.key_id,
        "fingerprint": ssh_fingerprint(key.public_hex),
        "public_key": public_key,
        "principal": principal,
        "allowed_signers": allowed_signers_line(principal, public_key),
    }


def trust(data_root: Path, public_key: str, principal: str) -> dict[str, Any]:
    from intentloop.store._stream import key_id_of, openssh_public_key, parse_openssh_public_key

    raw = parse_openssh_public_key(public_key)
    if raw is None:
        raise InvalidInputError("not an OpenSSH ssh-ed25519 public key", code="SHARE_KEY_INVALID")
    entry = TrustedKey(key_id=key_id_of(raw), public_key=openssh_public_key(raw), principal=check_principal(principal))
    trust_key(data_root, entry)
    return {"key_id": entry.key_id, "principal": entry.principal, "public_key": entry.public_key}


def preview(data_root: Path, raw: str | None) -> dict[str, Any]:
    """Exactly what the next sync would publish (and what redaction refuses), with the shared id and the peers seen."""
    from intentloop.service._share_publish import publish_set
    from intentloop.service._share_view import read_view

    located, identity = locate(data_root, raw)
    fields: dict[str, Any] = {
        "project_root": located.root,
        "project_id": located.project_id,
        "shared_id": None if identity is None else identity.shared_id,
        "shared_source": None if identity is None else identity.source,
    }
    if identity is None:
        return fields | {"remote": None, "items": [], "refused": [], "unknown_writers": [], "problems": []}
    settings = read_settings(data_root, identity.shared_id)
    ids = list(dict.fromkeys([*settings.locals, located.project_id]))
    found = publish_set(data_root, ids, settings)
    view = read_view(data_root, identity.shared_id)
    return fields | {
        "remote": settings.remote,
        "sync_every_s": settings.sync_every_s,
        "tasks": settings.tasks,
        "inferences": settings.inferences,
        "items": [{"item": item, **body} for item, body in found.items.items()],
        "refused": [{"item": r.item, "field": r.field, "kinds": r.kinds} for r in found.refused],
        "unknown_writers": [] if view is None else view.unknown,
        "problems": [] if view is None else view.problems,
    }


def sync(data_root: Path, raw: str | None) -> dict[str, Any]:
    from intentloop.service._share_sync import sync as run_sync

    located, identity = require_shared(data_root, raw)
    note_local(data_root, identity.shared_id, located.project_id)
    return run_sync(data_root, identity.shared_id, principal_of(data_root, located.root), located.root)


def snapshot_peers(
    data_root: Path, root: str, project_id: str, task: TaskState | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``intent_get_snapshot`` adds with ``include_peers``: the active peer claims, ordered as the snapshot orders
    claims, and the disputes between principals (``_share_disputes.py``) that involve them or ``task``'s own claims;
    nothing when the project is not shared or never synced. ``own`` compares with the principal the last sync ran as
    (no git is asked on this path). A peer claim of the user's own principal that ``task`` (or, after a sync, any
    task of this installation) supersedes or invalidates is not shown; another principal's stays, disputed. The claim
    dicts are the process's cached ones: read them, never change them (the list is the caller's)."""
    from intentloop.service._share_disputes import applied, disputes, task_refs

    found = _folded(data_root, root, project_id)
    if found is None:
        return [], []
    own = found.view.principal
    local = [*found.view.refs, *(task_refs(task, own) if task is not None else ())]
    gone = applied(local, found.owners)
    refs = [*found.refs, *local]
    owners: dict[str, str | None] = {}  # whose each named claim is, if it is active here: only the few refs ask
    for ref in refs:
        if ref.target in found.owners and ref.target not in gone:
            owners[ref.target] = found.owners[ref.target]
        elif task is not None and task.is_active(ref.target):
            owners[ref.target] = own
    wire = [claim for claim in found.wire if claim["claim_id"] not in gone] if gone else list(found.wire)
    return wire, disputes(refs, owners)


def _folded(data_root: Path, root: str, project_id: str) -> Folded | None:
    """The combined view of the project's shared id, folded (``None`` when the project is not shared or never
    synced)."""
    from intentloop.service._share_view import folded_view

    identity = shared_identity(data_root, root, project_id)
    return None if identity is None else folded_view(data_root, identity.shared_id)


def peer_claim(data_root: Path, root: str, project_id: str, claim_id: str) -> PeerClaim | None:
    """The active claim ``claim_id`` of the shared project's combined view (as a snapshot with ``include_peers``
    shows it), or ``None`` (also when the project is not shared or never synced)."""
    found = _folded(data_root, root, project_id)
    return None if found is None else found.by_id.get(claim_id)


def peer_claim_ids(data_root: Path, root: str, project_id: str) -> list[str]:
    """The ids of the combined view's active claims (none when the project is not shared or never synced)."""
    found = _folded(data_root, root, project_id)
    return [] if found is None else list(found.by_id)


#: the task a peer claim's graph names when the stream did not say which task it came from
_NO_TASK = "00000000-0000-4000-8000-000000000000"


def adoption(
    data_root: Path, raw: str | None, claim_id: str, task_id: str
) -> tuple[ProjectRoot, dict[str, Any], dict[str, str]]:
    """What ``intentloop share adopt`` imports: the ``intent_import`` arguments copying the active peer claim
    ``claim_id`` into ``task_id`` (a graph of that one claim, its references left out), and its source (writer,
    principal, claim id) for the record. Only an adoption makes a teammate's words the reader's, and then as
    ``explicit_import`` history, never as a direct user statement (docs/SYNC.md, "Teams: whose words and
    disagreements").

    Raises:
        IntentLoopError: ``SHARE_NOT_INITIALIZED``, ``INVALID_ID``, ``CLAIM_NOT_ACTIVE`` (no such active claim in the
            combined view the last sync wrote).
    """
    from intentloop.service._rules import check_uuid

    located, _identity = require_shared(data_root, raw)
    wanted = check_uuid(claim_id.strip().lower(), "claim_id")
    task = check_uuid(task_id, "task_id")
    peer = peer_claim(data_root, located.root, located.project_id, wanted)
    if peer is None:
        raise ConflictError(
            f"claim {wanted} is not an active claim of the shared view (intent_get_snapshot with include_peers lists "
            "them; run `intentloop sync` first)",
            code="CLAIM_NOT_ACTIVE",
        )
    claim = peer.claim.to_wire()
    claim["supersedes"], claim["related_claim_ids"] = [], []
    claim.pop("evidence_stale", None)
    graph = {
        "format": "intent-loop-export",
        "schema_version": 1,
        "exported_at": peer.claim.valid_from,
        "source_project_id": peer.writer,
        "source_task_id": peer.task_id or _NO_TASK,
        "history_complete": False,
        "claims": [claim],
        "invalidated_claim_ids": [],
        "candidates": [],
    }
    arguments = {"task_id": task, "request_id": f"adopt-{wanted}", "graph": graph}
    return located, arguments, {"writer": peer.writer, "principal": peer.principal, "claim_id": wanted}


__all__ = [
    "adoption",
    "init",
    "join",
    "keys",
    "locate",
    "peer_claim",
    "peer_claim_ids",
    "preview",
    "principal_of",
    "publish",
    "require_shared",
    "set_auto_sync",
    "set_principal",
    "set_remote",
    "snapshot_peers",
    "sync",
    "trust",
]
