"""The combined view of a shared project's peers: written by ``intentloop sync``, read by snapshots and hooks offline.

``R/share/projects/<shared>/view.json`` holds the live items of every trusted writer's accepted stream, with the
writer's key id and the principal this installation trusts it as, sealed by an HMAC under the installation's cache
key (a program without the key cannot make the view say something a stream did not). Reading it needs neither git
nor the network, so ``intent_get_snapshot`` with ``include_peers`` and the SessionStart hook stay as fast as a file
read.

The fold is the local ledger's (:func:`intentloop.model.projection.apply_event`): each writer's claims and
invalidations become ``claim_added`` / ``claim_invalidated`` events, folded per principal (writers sorted by key id,
records by sequence number; no wall clock orders anything), so supersessions and invalidations by the same principal
apply across that principal's machines and never across principals: one principal naming another's claim is a
dispute (``_share_disputes.py``), listed, never applied.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import msgspec

from intentloop.model.claims import Claim
from intentloop.model.compact import TeamCount
from intentloop.model.events import Event
from intentloop.model.projection import ProjectState, TaskState, apply_event
from intentloop.service._share_disputes import Ref, view_refs
from intentloop.store._fs import read_regular
from intentloop.store._keyfile import CACHE_KEY, load_key, load_or_create_key
from intentloop.store._share import project_dir, write_bytes

_VIEW_FILE = "view.json"
_WRITERS_DIR = "writers"
_HOOK_FILE = "own-claims.json"
_MAX_VIEW = 1 << 30  # the view of 100,000 peer events is some 40 MB
_FOLD_TASK = "00000000-0000-4000-8000-000000000000"
_DOMAIN = b"intentloop-share-view-v1\0"


class WriterCount(msgspec.Struct, kw_only=True):
    """What one writer's stream (at ``commit``) gives the teammates' count: the ids of its active direct user-explicit
    project and long-term claims, and the ids it supersedes or invalidates that it does not hold."""

    commit: str
    counted: list[str]
    outside: list[str]


class ViewWriter(msgspec.Struct, kw_only=True):
    """One trusted writer's accepted stream (``commit``) as the view holds it: its live items in sequence order
    (``count`` of them; the index file holds the writer without its items, its own file holds them); ``window`` is
    the key's validity window the items were chosen by and ``ignored`` the live items outside it; ``retracts`` its
    retract records (``{seq, item, target_writer}``, content-free, kept in the index too); ``team`` is what they
    give the teammates' count (computed when the file is written)."""

    key_id: str
    principal: str
    seq: int
    commit: str
    count: int = 0
    items: list[dict[str, Any]] = msgspec.field(default_factory=list)
    window: str | None = None
    ignored: int = 0
    retracts: list[dict[str, Any]] = msgspec.field(default_factory=list)
    team: WriterCount | None = None


class View(msgspec.Struct, kw_only=True):
    """What one sync accepted: the trusted writers' live items, the unknown writers, the problems, the principal
    this installation synced as (its own words are that principal's), the references its own stream makes to peer
    claims (``refs``: its supersessions and invalidations of claims it does not hold, :func:`own_refs`), and
    ``retracted``, the items retracts took out (``{writer, item, by}``: the writer holding the item, the retracting
    writer), never shown."""

    shared: str
    principal: str | None
    writers: list[ViewWriter]
    unknown: list[dict[str, Any]]
    problems: list[dict[str, Any]]
    retracted: list[dict[str, Any]] = msgspec.field(default_factory=list)
    refs: list[Ref] = msgspec.field(default_factory=list)

    def retracted_items(self) -> set[tuple[str, str]]:
        """``(writer, item)`` of every item a retract took out of this view."""
        return {(r["writer"], r["item"]) for r in self.retracted}


class PeerClaim(msgspec.Struct, frozen=True, kw_only=True):
    """An active peer claim and where it comes from."""

    claim: Claim
    writer: str
    principal: str
    task_id: str | None
    task_label: str | None


class OwnClaims(msgspec.Struct, kw_only=True):
    """What SessionStart injects from the user's other machines, and the count of teammates' claims it only counts,
    computed by the sync that wrote the view (a hook reads this small file, never the whole view)."""

    shared: str
    claims: list[Claim]
    team: TeamCount = msgspec.field(default_factory=TeamCount)


class Fold(msgspec.Struct, kw_only=True):
    """One principal's writers folded together: the state (every claim, its supersessions and invalidations), where
    each claim comes from (writer, task) and the labels of the tasks they published."""

    principal: str
    state: TaskState
    origin: dict[str, tuple[str, str | None]]
    labels: dict[str, str | None]


def _write_sealed(path: Path, key: bytes, value: Any) -> None:
    """``<HMAC-SHA-256 hex>\\n<JSON>``: the seal covers the bytes, so it is checked without decoding them."""
    data = msgspec.json.encode(value)
    mac = hmac.new(key, _DOMAIN + data, hashlib.sha256).hexdigest().encode("ascii")
    write_bytes(path, mac + b"\n" + data)


def _sealed_bytes(path: Path, key: bytes | None, max_bytes: int = _MAX_VIEW) -> bytes | None:
    """The JSON of a sealed file whose seal verifies under ``key``; ``None`` when missing or not sealed by it."""
    opened = read_regular(path)
    if opened is None or key is None or len(opened[0]) > max_bytes:
        return None
    mac, _, data = opened[0].partition(b"\n")
    if not hmac.compare_digest(mac, hmac.new(key, _DOMAIN + data, hashlib.sha256).hexdigest().encode("ascii")):
        return None
    return data


def _read_sealed(path: Path, key: bytes | None, kind: type[Any]) -> Any:
    data = _sealed_bytes(path, key)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError:
        return None


def _writer_path(data_root: Path, shared: str, key_id: str) -> Path:
    return project_dir(data_root, shared) / _WRITERS_DIR / f"{key_id}.json"


def write_writer(data_root: Path, shared: str, writer: ViewWriter) -> ViewWriter:
    """Write one writer's items to its sealed file; returns its index entry (``count`` and ``team`` set, no items)."""
    key = load_or_create_key(data_root, CACHE_KEY)
    writer.count = len(writer.items)
    writer.team = _writer_count(writer)
    _write_sealed(_writer_path(data_root, shared, writer.key_id), key, writer)
    return msgspec.structs.replace(writer, items=[])


def write_view(data_root: Path, view: View) -> None:
    """Write the view's index (its writers' files are written as they are accepted, :func:`write_writer`) and the
    hook's extract, sealed under the cache key; the files of writers the view no longer holds are removed."""
    key = load_or_create_key(data_root, CACHE_KEY)
    directory = project_dir(data_root, view.shared)
    keep = {f"{w.key_id}.json" for w in view.writers}
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(directory / _WRITERS_DIR):
            if name.endswith(".json") and name not in keep:
                os.unlink(directory / _WRITERS_DIR / name)
    _write_sealed(directory / _HOOK_FILE, key, _hook_extract(data_root, view))
    index = msgspec.structs.replace(view, writers=[msgspec.structs.replace(w, items=[]) for w in view.writers])
    _write_sealed(directory / _VIEW_FILE, key, index)


def read_view(data_root: Path, shared: str, *, items: bool = True) -> View | None:
    """The view the last sync wrote (with every writer's items, or only the index); ``None`` without one, or when a
    seal does not verify or a writer's file is not the one the index names (then it is not used)."""
    key = load_key(data_root, CACHE_KEY)
    view: View | None = _read_sealed(project_dir(data_root, shared) / _VIEW_FILE, key, View)
    if view is None:
        return None
    if items:
        for index, writer in enumerate(view.writers):
            full = writer_items(data_root, shared, writer, key)
            if full is None:
                return None
            view.writers[index] = full
    return view


def writer_items(data_root: Path, shared: str, writer: ViewWriter, key: bytes | None = None) -> ViewWriter | None:
    """``writer`` (an index entry) with its items, from its sealed file; ``None`` when the file is missing, unsealed,
    or holds another commit than the index names."""
    key = key if key is not None else load_key(data_root, CACHE_KEY)
    found: ViewWriter | None = _read_sealed(_writer_path(data_root, shared, writer.key_id), key, ViewWriter)
    if found is None or (found.commit, found.seq, found.key_id) != (writer.commit, writer.seq, writer.key_id):
        return None
    return msgspec.structs.replace(found, principal=writer.principal)


class _HeldItem(msgspec.Struct):
    digest: str
    blob: str
    body: msgspec.Raw


class _HeldWriter(msgspec.Struct):
    key_id: str
    seq: int
    commit: str
    items: list[_HeldItem] = msgspec.field(default_factory=list)


def writer_verified(data_root: Path, shared: str, writer: ViewWriter) -> dict[str, tuple[str, msgspec.Raw]]:
    """payload digest → (blob id, the body as its file holds it, undecoded) of ``writer``'s sealed file (empty when
    it is missing, unsealed or of another commit): what a sync needs to keep the payloads it verified before without
    reading them again. Why undecoded: a long stream's claims decoded cost some four times their JSON."""
    found: _HeldWriter | None = _read_sealed(
        _writer_path(data_root, shared, writer.key_id), load_key(data_root, CACHE_KEY), _HeldWriter
    )
    if found is None or (found.commit, found.seq, found.key_id) != (writer.commit, writer.seq, writer.key_id):
        return {}
    return {item.digest: (item.blob, item.body) for item in found.items}


def writer_file_sealed(data_root: Path, shared: str, key_id: str) -> bool:
    """Whether a writer's file is there and sealed (checked over its bytes, not decoded)."""
    return _sealed_bytes(_writer_path(data_root, shared, key_id), load_key(data_root, CACHE_KEY)) is not None


class Folded(msgspec.Struct, kw_only=True):
    """A view folded for snapshots: its active peer claims (``wire``, :func:`peer_wire`, in the snapshot's claim
    order; ``by_id`` the same claims by id, ``owners`` their principals), and the claims a principal's supersessions
    and invalidations name that its fold does not hold (``refs``, judged by :mod:`intentloop.service._share_disputes`).
    Nothing of it is changed after the fold: a resident server hands the same dicts to every snapshot."""

    view: View
    wire: list[dict[str, Any]]
    by_id: dict[str, PeerClaim]
    owners: dict[str, str | None]
    refs: list[Ref]


#: view file → (its stat, the view folded): a resident server folds and orders a view once per sync.
_FOLDED: dict[Path, tuple[tuple[int, int, int, int], Folded]] = {}


def folded_view(data_root: Path, shared: str) -> Folded | None:
    """:func:`read_view` folded (:class:`Folded`), kept in this process while the file is unchanged (device, inode,
    size and mtime); ``None`` without a usable view. Callers never change it."""
    path = project_dir(data_root, shared) / _VIEW_FILE
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    held = _FOLDED.get(path)
    if held is None or held[0] != key:
        from intentloop.model.compact import context_order

        view = read_view(data_root, shared)
        if view is None:
            return None
        folds = fold(view)
        peers = active_peers(folds)
        order = {id(c): i for i, c in enumerate(context_order([p.claim for p in peers]))}
        ordered = sorted(peers, key=lambda p: order[id(p.claim)])
        wire = [peer_wire(p, view.principal) for p in ordered]
        by_id = {p.claim.claim_id: p for p in ordered}
        owners: dict[str, str | None] = {claim_id: p.principal for claim_id, p in by_id.items()}
        held = _FOLDED[path] = (
            key,
            Folded(view=view, wire=wire, by_id=by_id, owners=owners, refs=view_refs(folds)),
        )
    return held[1]


def _with_items(data_root: Path, view: View, writer: ViewWriter) -> ViewWriter | None:
    return writer if writer.items or not writer.count else writer_items(data_root, view.shared, writer)


class _Kind(msgspec.Struct):
    kind: str


class _Counted(msgspec.Struct):
    """The fields of a claim a teammates' count reads (the rule is :attr:`Claim.is_direct_user_explicit`'s)."""

    claim_id: str
    role: str
    epistemic_status: str
    scope: str
    source_ref: _Kind
    supersedes: list[str] = msgspec.field(default_factory=list)


def _writer_count(writer: ViewWriter) -> WriterCount:
    """:class:`WriterCount` of one writer's items, without folding them: a writer's count costs little more than
    reading its items once (a claim whose counted fields do not decode is not one)."""
    claims: dict[str, _Counted] = {}
    named: set[str] = set()
    for entry in writer.items:
        body = entry["body"]
        if isinstance(body, msgspec.Raw):  # a payload verified before, kept as its file held it
            body = msgspec.json.decode(body)
        if body.get("type") == "claim" and isinstance(body.get("claim"), dict):
            try:
                claim = msgspec.convert(body["claim"], type=_Counted)
            except msgspec.ValidationError:
                continue
            claims[claim.claim_id] = claim
        elif body.get("type") == "invalidation" and isinstance(body.get("claim_id"), str):
            named.add(body["claim_id"])
    for claim in claims.values():
        named.update(claim.supersedes)
    counted = [
        claim_id
        for claim_id, claim in claims.items()
        if claim_id not in named
        and (claim.role, claim.epistemic_status, claim.source_ref.kind) == ("user", "explicit", "user_event")
        and claim.scope in ("project", "long_term")
    ]
    return WriterCount(commit=writer.commit, counted=counted, outside=sorted(named - claims.keys()))


def _hook_extract(data_root: Path, view: View) -> OwnClaims:
    """The user's own direct user-explicit project and long-term claims of ``view``, and how many of other
    principals' there are. The own principal's writers are folded together (their files read); another principal's
    are counted from each writer's ``team`` (computed when its file was written, so a sync neither reads nor holds a
    teammate's claims again): a claim counts unless a writer of the same principal supersedes or invalidates it, as
    the fold per principal would have it, or an honoured retract took it out of the view."""
    groups: dict[str, list[ViewWriter]] = {}
    for writer in view.writers:
        groups.setdefault(writer.principal, []).append(writer)
    own: list[Claim] = []
    team = 0
    principals: list[str] = []
    withdrawn = {ref.target for ref in view.refs}  # the user's own supersessions and invalidations, from here
    retracted = view.retracted_items()
    for principal, writers in sorted(groups.items()):
        if view.principal is not None and principal == view.principal:
            full = [w for w in (_with_items(data_root, view, writer) for writer in writers) if w is not None]
            own = [
                p.claim
                for p in active_peers(fold(msgspec.structs.replace(view, writers=full)))
                if p.claim.is_direct_user_explicit
                and p.claim.scope in ("project", "long_term")
                and p.claim.claim_id not in withdrawn
            ]
            continue
        counted: set[str] = set()
        outside: set[str] = set()
        for writer in writers:
            entry = writer.team
            if entry is None or entry.commit != writer.commit:  # a view written before counts were kept
                loaded = _with_items(data_root, view, writer)
                if loaded is None:
                    continue
                entry = _writer_count(loaded)
            counted.update(c for c in entry.counted if (writer.key_id, f"claim:{c}") not in retracted)
            outside.update(entry.outside)
        if counted - outside:
            team += len(counted - outside)
            principals.append(principal)
    return OwnClaims(shared=view.shared, claims=own, team=TeamCount(count=team, principals=tuple(principals)))


def _event(kind: str, payload: dict[str, Any], seq: int, writer: str, at: str) -> Event:
    return Event(
        actor="user",
        event_hash=f"{writer}:{seq}",
        event_id=f"{writer}:{seq}",
        event_type=kind,
        occurred_at=at,
        payload=payload,
        prev_hash=None,
        project_id=writer,
        request_id=f"{writer}:{seq}",
        schema_version=1,
        task_id=_FOLD_TASK,
    )


def own_refs(items: dict[str, dict[str, Any]], principal: str | None) -> list[Ref]:
    """The references this installation's own stream (``items``, as it now publishes them) makes to claims it does
    not hold: its supersessions and invalidations of peer claims, as ``principal``'s."""
    entries = [{"seq": seq, "body": body} for seq, body in enumerate(items.values(), 1)]
    writer = ViewWriter(key_id="own", principal=principal or "", seq=len(entries), commit="", items=entries)
    folds = fold(View(shared="", principal=principal, writers=[writer], unknown=[], problems=[]))
    return [msgspec.structs.replace(ref, by_principal=principal) for ref in view_refs(folds)]


def fold(view: View, *, principals: set[str] | None = None) -> list[Fold]:
    """The view's writers folded per principal (principals sorted; only ``principals`` when given). An item the
    view lists as retracted is left out."""
    gone = view.retracted_items()
    groups: dict[str, list[ViewWriter]] = {}
    for writer in view.writers:
        if principals is None or writer.principal in principals:
            groups.setdefault(writer.principal, []).append(writer)
    found: list[Fold] = []
    for principal, writers in sorted(groups.items()):
        state = ProjectState()
        origin: dict[str, tuple[str, str | None]] = {}
        labels: dict[str, str | None] = {}
        for writer in sorted(writers, key=lambda w: w.key_id):
            for entry in writer.items:
                body = entry["body"]
                if body.get("type") == "task":
                    labels[str(body.get("task"))] = body.get("label")
        for writer in sorted(writers, key=lambda w: w.key_id):
            for entry in writer.items:
                if gone and (writer.key_id, entry.get("item")) in gone:
                    continue
                body, seq = entry["body"], entry["seq"]
                if body.get("type") == "claim" and isinstance(body.get("claim"), dict):
                    claim = body["claim"]
                    origin[str(claim.get("claim_id"))] = (writer.key_id, body.get("task"))
                    apply_event(
                        state, _event("claim_added", {"claim": claim}, seq, writer.key_id, str(claim.get("valid_from")))
                    )
                elif body.get("type") == "invalidation":
                    payload = {
                        "claim_id": body.get("claim_id"),
                        "invalidated_at": body.get("invalidated_at"),
                        "reason": body.get("reason"),
                        "source_ref": {"kind": body.get("source_kind") or "user_event"},
                    }
                    apply_event(
                        state, _event("claim_invalidated", payload, seq, writer.key_id, str(body.get("invalidated_at")))
                    )
        task = state.task(_FOLD_TASK)
        if task is not None:
            found.append(Fold(principal=principal, state=task, origin=origin, labels=labels))
    return found


def active_peers(folds: list[Fold]) -> list[PeerClaim]:
    """The active claims of ``folds``, each with its origin."""
    found: list[PeerClaim] = []
    for one in folds:
        for claim in one.state.active_claims():
            writer_id, task_id = one.origin[claim.claim_id]
            found.append(
                PeerClaim(
                    claim=claim,
                    writer=writer_id,
                    principal=one.principal,
                    task_id=task_id,
                    task_label=one.labels.get(task_id) if task_id is not None else None,
                )
            )
    return found


def peer_claims(view: View, *, principals: set[str] | None = None) -> list[PeerClaim]:
    """The active claims of the view, each with its origin; only those of ``principals`` when given."""
    return active_peers(fold(view, principals=principals))


def own_hook_claims(data_root: Path, root: str, project_id: str) -> tuple[list[Claim], TeamCount | None]:
    """The active direct user-explicit claims of scope project or long-term from this installation's own principal's
    other machines, as SessionStart injects them beside the linked task's, and the count of other principals' (which
    a hook only counts); none when the project is not shared, never synced, or anything is unreadable or unsealed (a
    hook never fails over peers)."""
    from intentloop.errors import IntentLoopError
    from intentloop.store._share import shared_identity

    try:
        identity = shared_identity(data_root, root, project_id)
        if identity is None:
            return [], None
        path = project_dir(data_root, identity.shared_id) / _HOOK_FILE
        found: OwnClaims | None = _read_sealed(path, load_key(data_root, CACHE_KEY), OwnClaims)
    except IntentLoopError:
        return [], None
    return ([], None) if found is None else (found.claims, found.team)


def peer_wire(peer: PeerClaim, own_principal: str | None) -> dict[str, Any]:
    """A peer claim as ``intent_get_snapshot`` shows it: the claim's fields plus ``origin``."""
    origin: dict[str, Any] = {
        "writer": peer.writer,
        "principal": peer.principal,
        "own": own_principal is not None and peer.principal == own_principal,
        "task_id": peer.task_id,
    }
    if peer.task_label is not None:
        origin["task_label"] = peer.task_label
    return {**peer.claim.to_wire(), "origin": origin}


__all__ = [
    "Fold",
    "Folded",
    "PeerClaim",
    "View",
    "ViewWriter",
    "active_peers",
    "fold",
    "folded_view",
    "own_hook_claims",
    "own_refs",
    "peer_claims",
    "peer_wire",
    "read_view",
    "write_view",
]
