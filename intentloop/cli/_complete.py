"""Shell completion of the CLI's fixed words: hosts, hook events and export formats (typer's ``autocompletion``).

Each list is read from the table that defines it, so completion never offers a word the command would refuse.
"""

from __future__ import annotations


def hosts(incomplete: str) -> list[str]:
    from intentloop.cli.install import HOSTS

    return [host for host in HOSTS if host.startswith(incomplete.lower())]


def hook_events(incomplete: str) -> list[str]:
    from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT
    from intentloop.model.hook_events import EVENT_BY_ARGUMENT

    events = [*EVENT_BY_ARGUMENT, *GEMINI_EVENT_BY_ARGUMENT]
    return [event for event in events if event.startswith(incomplete.lower())]


def formats(incomplete: str) -> list[str]:
    from intentloop.cli.export_task import FORMATS

    return [name for name in FORMATS if name.startswith(incomplete.lower())]


__all__ = ["formats", "hook_events", "hosts"]
