"""``share members``' status of a key (``intentloop/service/_share_members.py``): each status from what the last sync
recorded, the first that applies winning, each beside the state that does not give it.
"""

from __future__ import annotations

from intentloop.service._share_members import _status
from intentloop.service._share_sync import PeerState
from intentloop.store._share import TrustedKey

NOW = "2026-12-03T06:00:00Z"
KEY = TrustedKey(key_id="k", public_key="ssh-ed25519 AAAA", principal="bob@x")


def test_a_key_nothing_was_accepted_from_is_pending_and_one_with_a_sequence_is_accepted() -> None:
    assert _status(KEY, PeerState(), None, NOW)[0] == "pending"
    assert _status(KEY, PeerState(seq=3, head="h"), None, NOW) == ("accepted", None)


def test_a_frozen_writer_says_why_and_where_before_anything_else() -> None:
    frozen = PeerState(seq=3, head="h", frozen="equivocation: the stream forks from the accepted one", frozen_seq=3)
    windowed = TrustedKey(key_id="k", public_key="p", principal="bob@x", valid_before="2026-01-01T00:00:00Z")
    status, why = _status(windowed, frozen, {"problem": "x", "problem_seq": 1}, NOW)
    assert status == "frozen" and why is not None and "forks" in why and "(sequence 3)" in why


def test_a_key_outside_its_window_now_says_the_window() -> None:
    later = TrustedKey(key_id="k", public_key="p", principal="bob@x", valid_after="2027-03-01T00:00:00Z")
    status, why = _status(later, PeerState(seq=1, head="h"), None, NOW)
    assert status == "out_of_window" and why is not None and "from 2027-03-01T00:00:00Z until any time" in why
    ended = TrustedKey(key_id="k", public_key="p", principal="bob@x", valid_before="2026-12-03T05:59:59Z")
    assert _status(ended, PeerState(seq=1, head="h"), None, NOW)[0] == "out_of_window"
    current = TrustedKey(key_id="k", public_key="p", principal="bob@x", valid_before=NOW)  # the bound itself: in
    assert _status(current, PeerState(seq=1, head="h"), None, NOW)[0] == "accepted"


def test_a_stream_the_last_sync_set_aside_keeps_its_last_good_state() -> None:
    problem = {"status": "tampered", "problem": "a payload does not match its digest", "problem_seq": 4}
    status, why = _status(KEY, PeerState(seq=3, head="h"), problem, NOW)
    assert status == "set_aside"
    assert why == (
        "the last sync set its stream aside: a payload does not match its digest (sequence 4); "
        "the last good state (sequence 3) is kept"
    )
