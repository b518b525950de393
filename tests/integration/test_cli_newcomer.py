"""What a new user of the CLI tripped over (issue 26), as real `intentloop` subprocesses: times and ids, output,
paths, off tasks and the small things.

The memory is written through the real service (``Memory`` of test_cli_people) and read back only through the CLI.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from integration.test_cli_people import Memory, _bytes_under, _on_terminal, memory

__all__ = ["memory"]  # the fixture, shared


def _ms(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# ------------------------------------------------------------------------------------------------- times and ids


def test_as_of_takes_a_date_a_local_time_and_an_offset_and_echoes_the_utc_instant(memory: Memory) -> None:
    ids = memory.populate()
    started = datetime.strptime(
        memory.json("show", ids["a"])[1]["snapshot"]["active_claims"][0]["valid_from"], "%Y-%m-%dT%H:%M:%S.%fZ"
    ).replace(tzinfo=UTC)
    later = started + timedelta(hours=1)
    memory.env["TZ"] = "UTC-02"  # POSIX: two hours east of UTC, no tz database needed
    local = (later + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")
    offset = (later + timedelta(hours=5, minutes=30)).strftime("%Y-%m-%dT%H:%M:%S") + "+05:30"
    whole_second = _ms(later.replace(microsecond=0))
    for typed, expected in ((local, whole_second), (offset, whole_second), (_ms(later), _ms(later))):
        code, body = memory.json("show", ids["a"], "--as-of", typed)
        assert code == 0 and body["as_of"] == expected, (typed, body)
        assert body["snapshot"]["active_claims"]
    human = memory.run("show", ids["a"], "--as-of", offset)
    assert f"as recorded at {whole_second} (UTC; --as-of {offset})" in human.stdout
    # a date is its local midnight: the day after the task started shows it, the day before it did not exist yet
    next_day = (started + timedelta(days=1, hours=2)).strftime("%Y-%m-%d")
    code, body = memory.json("show", ids["a"], "--as-of", next_day)
    assert code == 0 and body["as_of"].endswith("T22:00:00.000Z")  # 00:00 at UTC+2
    day_before = (started - timedelta(days=1)).strftime("%Y-%m-%d")
    code, body = memory.json("show", ids["a"], "--as-of", day_before)
    assert code == 5 and body["error"]["code"] == "TASK_NOT_FOUND"
    assert "did not exist yet" in body["error"]["message"] and "not associated" not in body["error"]["message"]
    # what is not a time names the option and the forms it takes
    code, body = memory.json("show", ids["a"], "--as-of", "yesterday")
    assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS" and "--as-of" in body["error"]["message"]


def test_destructive_commands_need_four_characters_of_an_id(memory: Memory) -> None:
    ids = memory.populate()
    before = memory.tree()
    for kind, key in (("claim", "other"), ("task", "b")):
        for prefix in (ids[key][:1], ids[key][:3]):
            code, body = memory.json("forget", kind, prefix, "--yes")
            assert code == 2 and body["error"]["code"] == "INVALID_ID", (kind, prefix, body)
            assert "at least 4 characters" in body["error"]["message"]
    assert memory.tree() == before
    # control: four characters are enough
    code, body = memory.json("forget", "claim", ids["other"][:4], "--yes")
    assert code == 0 and body["claim_id"] == ids["other"]


def test_the_confirmation_shows_the_claim_and_takes_the_prefix_as_typed(memory: Memory) -> None:
    ids = memory.populate()
    prefix = ids["other"][:6]
    code, _stdout, seen = _on_terminal(
        memory, ["forget", "claim", prefix], f"DELETE CLAIM {prefix}\n".encode(), b"to confirm:"
    )
    shown = seen.decode()
    assert code == 0, shown
    assert "Nothing else" in _stdout + shown  # the claim's text, before the question
    assert f"DELETE CLAIM {prefix}" in shown
    assert ids["other"].encode() not in _bytes_under(memory.dir)
    # control: another prefix than the one typed is not the confirmation
    task = ids["a"][:6]
    code, _stdout, seen = _on_terminal(memory, ["forget", "task", task], b"DELETE TASK 0000\n", b"to confirm:")
    assert code == 1 and ids["a"].encode() in _bytes_under(memory.dir)


def test_project_ids_have_one_printed_width_everywhere(memory: Memory) -> None:
    memory.populate()
    widths = {}
    for command in (["status"], ["projects"], ["tasks"], ["verify"]):
        out = memory.run(*command).stdout
        printed = {
            word.strip("()") for word in out.split() if word.strip("()") and memory.pid.startswith(word.strip("()"))
        }
        printed = {word for word in printed if len(word) >= 8}
        assert printed, (command, out)
        widths[command[0]] = {len(word) for word in printed}
    assert set().union(*widths.values()) == {12}, widths
