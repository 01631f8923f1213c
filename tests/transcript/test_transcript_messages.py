"""The span (PASS-4) tied to branch entries, and ``u<n>`` ids that never move (FOLD-10)."""

from __future__ import annotations

from typing import Any

from longhaul_daemon.protocol import Preparation
from longhaul_daemon.transcript.messages import SpanMessage, select_span, span_messages, user_ids, user_text


def user(text: str, ts: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def assistant(text: str, ts: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "openai-completions",
        "provider": "fake",
        "model": "m",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "stopReason": "stop",
        "timestamp": ts,
    }


def bash_execution(command: str, ts: int) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": "ok\n",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": ts,
    }


def entry(entry_id: str, message: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-05-07T10:00:00.000Z",
        "message": message,
    }


def preparation(messages: list[dict[str, Any]], prefix: list[dict[str, Any]], split: bool) -> Preparation:
    return Preparation(
        firstKeptEntryId="kept0001",
        messagesToSummarize=messages,
        turnPrefixMessages=prefix,
        isSplitTurn=split,
        tokensBefore=1000,
    )


U1, A1, U2, A2, B1, U3 = (
    user("first", 1),
    assistant("ok", 2),
    user("second", 3),
    assistant("done", 4),
    bash_execution("ls", 5),
    user("third", 6),
)
BRANCH = [
    {"type": "model_change", "id": "m0", "parentId": None, "provider": "fake", "modelId": "m"},
    entry("e1", U1, "m0"),
    entry("e2", A1, "e1"),
    {
        "type": "custom_message",
        "id": "cm",
        "customType": "x",
        "content": "not a user message",
        "display": True,
    },
    entry("e3", U2, "e2"),
    entry("e4", A2, "e3"),
    entry("e5", B1, "e4"),
    {"type": "custom", "id": "c1", "customType": "compaction-state.line", "data": {"v": 1}},
    entry("e6", U3, "e5"),
]


def test_user_ids_count_user_messages_from_the_root() -> None:
    """FOLD-10: u<n> is the position among user messages; bashExecution and custom_message do not count."""
    assert user_ids(BRANCH) == {"e1": "u1", "e3": "u2", "e6": "u3"}


def test_user_ids_do_not_change_when_earlier_messages_were_summarized() -> None:
    """FOLD-10: the span need not start at the root; ids come from the whole branch."""
    prep = preparation([U3], [], False)
    (only,) = select_span(prep, BRANCH)
    assert only == SpanMessage(entry_id="e6", role="user", message=U3, user_id="u3")


def test_user_ids_skip_garbage_entries() -> None:
    garbage: list[Any] = [None, 5, "x", {"type": "message"}, {"type": "message", "id": "g", "message": [1]}]
    branch = [*garbage, entry("e1", U1), {"type": "message", "message": U2}, entry("e3", U3)]
    # the id-less user entry still takes position 2, so e3 is u3
    assert user_ids(branch) == {"e1": "u1", "e3": "u3"}


def test_select_span_maps_each_message_to_its_entry() -> None:
    """PASS-4: messagesToSummarize, each tied to its branch entry id."""
    span = select_span(preparation([U1, A1, U2, A2, B1], [], False), BRANCH)
    assert [(m.entry_id, m.role, m.user_id) for m in span] == [
        ("e1", "user", "u1"),
        ("e2", "assistant", None),
        ("e3", "user", "u2"),
        ("e4", "assistant", None),
        ("e5", "bashExecution", None),
    ]
    assert span[0].message == U1


def test_select_span_split_turn_appends_the_prefix() -> None:
    """PASS-4: when the cut split a turn, turnPrefixMessages follow messagesToSummarize."""
    span = select_span(preparation([U1, A1], [U2, A2], True), BRANCH)
    assert [m.entry_id for m in span] == ["e1", "e2", "e3", "e4"]


def test_select_span_ignores_the_prefix_when_not_split() -> None:
    span = select_span(preparation([U1, A1], [U2, A2], False), BRANCH)
    assert [m.entry_id for m in span] == ["e1", "e2"]


def test_unmatched_message_gets_no_entry_id() -> None:
    """PASS-4: a message with no identical entry gets entry_id None; the scan continues after it."""
    stranger = user("never written to the session", 99)
    span = select_span(preparation([U1, stranger, A1], [], False), BRANCH)
    assert [(m.entry_id, m.user_id) for m in span] == [("e1", "u1"), (None, None), ("e2", None)]


def test_identical_messages_map_to_successive_entries() -> None:
    """Deep equality scanning forward: two identical messages take two entries, in branch order."""
    same = user("again", 7)
    branch = [entry("x1", same), entry("x2", assistant("a", 8)), entry("x3", dict(same))]
    span = span_messages([same, same, same], branch)
    assert [m.entry_id for m in span] == ["x1", "x3", None]
    assert [m.user_id for m in span] == ["u1", "u2", None]


def test_matching_never_goes_backwards() -> None:
    span = span_messages([U2, U1], BRANCH)
    assert [m.entry_id for m in span] == ["e3", None]


def test_garbage_messages_and_branch_never_raise() -> None:
    garbage_branch: list[Any] = [None, [], {"type": "message", "id": 3, "message": U1}, {"id": "z"}]
    span = span_messages([U1, "text", 5, None, {"role": 7}, {"x": float("inf")}], garbage_branch)
    assert [(m.entry_id, m.role) for m in span] == [(None, "user"), (None, "unknown"), (None, "unknown")]


def test_user_text() -> None:
    assert user_text(U1) == "first"
    assert user_text({"role": "user", "content": "plain"}) == "plain"
    assert (
        user_text(
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}],
            }
        )
        == "a\nb"
    )
    assert user_text({"role": "user", "content": None}) == ""


def test_a_reference_names_the_last_message_entry_with_its_id_wherever_the_branch_repeats_it() -> None:
    """The span's entries are found from the leaf (issue 10): a repeated id still names its last message
    entry, an entry of another type with that id is passed over, and a missing id is left out, as a lookup
    over the whole branch gives."""
    branch = [
        entry("e1", user("first", 1)),
        entry("e2", assistant("old", 2)),
        {"type": "custom", "id": "e2", "data": {}},
        entry("e2", assistant("new", 3)),
        {"type": "custom", "id": "e2", "data": {}},
        entry("e3", user("third", 4)),
        {"type": "message", "id": ["e4"], "message": user("odd id", 5)},
    ]
    refs = [{"entryRef": "e2"}, {"entryRef": "gone"}, {"entryRef": "e3"}, {"entryRef": "e1"}]
    span = select_span(preparation(refs, [], False), branch)
    assert [(m.entry_id, m.role, m.user_id) for m in span] == [
        ("e2", "assistant", None),
        ("e3", "user", "u2"),
        ("e1", "user", "u1"),
    ]
    assert span[0].message == assistant("new", 3)
