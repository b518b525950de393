"""``intentloop keys show`` and ``intentloop keys rotate``: the installation's signing key, its fingerprint (to pin it
somewhere a program without the key cannot edit), and the one way to replace a missing key after seeing what it
signed."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from intentloop.cli._exit import DAMAGED, OK
from intentloop.cli._options import JsonOption
from intentloop.cli._output import Output, key_value_table

YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (required without a terminal).")]


def show(json_output: JsonOption = False) -> int:
    """Print the signing key's fingerprint (key id), public key and file, and how many projects it signed.

    Reads only; creates nothing. Write the key id down somewhere else (a password manager, a note on another
    machine): a program that replaces the key and re-signs a forged chain cannot keep this fingerprint.
    """
    out = Output("keys show", json_mode=json_output)
    return out.guard(lambda: _show(out))


def _show(out: Output) -> int:
    from intentloop.store import resolve_data_root
    from intentloop.store._signed_record import signed_projects
    from intentloop.store._signing import key_path, load_signing_key

    root = resolve_data_root()
    key = load_signing_key(root)
    fields: dict[str, Any] = {
        "key_path": str(key_path(root)),
        "key_id": None if key is None else key.key_id,
        "public_key": None if key is None else key.public_hex,
        "signed_projects": len(signed_projects(root)),
    }
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
        return OK
    rows = [
        (name.replace("_", " "), "none (created by the first write)" if value is None else str(value))
        for name, value in fields.items()
    ]
    out.show(key_value_table("Signing key", rows))
    return OK


def rotate(yes: YesOption = False, json_output: JsonOption = False) -> int:
    """Replace a missing signing key: verify every project this installation signed under the public key recorded for
    it, show the results, then (asked first) create a new key and re-sign the chains the old key vouches for.

    Chains it does not vouch for stay refused until `intentloop verify --accept`. Exit 0 done, 1 declined.
    """
    out = Output("keys rotate", json_mode=json_output)
    return out.guard(lambda: _rotate(out, yes=yes))


def _rotate(out: Output, *, yes: bool) -> int:
    from intentloop.cli._confirm import confirm, declined
    from intentloop.cli.verify import report_table
    from intentloop.recovery import plan_rotation, rotate_key
    from intentloop.store import resolve_data_root

    root = resolve_data_root()
    with out.progress("Verifying the signed projects"):
        plan = plan_rotation(root)
    resignable = {report.project_id for report, _key in plan.resignable}
    fields: dict[str, Any] = {
        "projects": [{**report.to_dict(), "resign": report.project_id in resignable} for report, _key in plan.reports]
    }
    if not out.json_mode:
        for report, _key in plan.reports:
            out.show(report_table(report))
        out.line(
            f"{len(resignable)} of {len(plan.reports)} signed projects verify under the missing key and will be "
            "re-signed under a new one; the others stay refused until `intentloop verify --accept`."
        )
    if not yes and not confirm("Create a new signing key and re-sign them?", what="keys rotate creates a new key"):
        return declined(out, fields, exit_code=DAMAGED)
    key_id, resigned = rotate_key(root, plan)
    fields.update({"key_id": key_id, "resigned": resigned})
    if out.json_mode:
        out.json_object(fields, exit_code=OK)
    else:
        out.line(f"new key id {key_id}; re-signed {len(resigned)} projects")
    return OK


__all__ = ["rotate", "show"]
