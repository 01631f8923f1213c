"""Rule words copied and verified by code: lengths, boundaries, binding, goal messages (QUOTE-1..11, 16)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.judged import excluded_ranges, judged_text
from longhaul_daemon.passes.answers.quotes import (
    GOAL_TAGS,
    OfferedMessage,
    cut_at,
    find_words,
    goal_objective_range,
    normalize_newlines,
    quotable_text,
    resolve_rule_words,
)


def _sized(core: str, length: int) -> str:
    """A message of exactly ``length`` code points holding ``core`` after some neutral filler."""
    filler = "Some context about the build. "
    text = core
    while len(text) < length:
        text = filler + text
    return text[len(text) - length :] if len(text) > length else text


def _msg(n: int, text: str, *, excerpt_only: bool = False) -> OfferedMessage:
    return OfferedMessage(id=f"u{n}", text=text, excerpt_only=excerpt_only)


RULE = "Never add new dependencies without asking me first."


# --- QUOTE-1 / QUOTE-2 / QUOTE-3 / QUOTE-4: lengths ---


@pytest.mark.parametrize("length", [len(RULE), 299, 300])
def test_quote_2_short_message_recorded_whole_even_with_verified_words(length: int) -> None:
    text = _sized(RULE, length)
    verdict = resolve_rule_words("u1", "Never add new dependencies", [_msg(1, text)], final=False)
    assert (verdict.outcome, verdict.reason, verdict.text) == ("record", "whole-short", text)
    assert not verdict.rejected_quote


def test_quote_2_words_no_user_holds_are_a_rejected_quote_without_retry() -> None:
    verdict = resolve_rule_words("u1", "never add dependencies", [_msg(1, RULE)], final=False)
    assert (verdict.outcome, verdict.text, verdict.message) == ("record", RULE, "u1")
    assert verdict.rejected_quote and verdict.words_issue == "not-found"


def test_quote_2_cut_words_on_a_short_message_cost_no_retry() -> None:
    verdict = resolve_rule_words("u1", "ever add new", [_msg(1, RULE)], final=False)
    assert (verdict.outcome, verdict.reason, verdict.words_issue) == (
        "record",
        "whole-short",
        "starts-inside-word",
    )


def test_quote_3_middle_length_records_verified_words() -> None:
    text = _sized(RULE, 301)
    verdict = resolve_rule_words("u1", "Never add new dependencies", [_msg(1, text)], final=False)
    assert (verdict.outcome, verdict.reason, verdict.text) == (
        "record",
        "words",
        "Never add new dependencies",
    )
    assert text[verdict.start : verdict.end] == verdict.text


@pytest.mark.parametrize("words", [None, "", "never add deps"])
def test_quote_3_middle_length_without_verified_words_is_whole(words: str | None) -> None:
    text = _sized(RULE, 600)
    verdict = resolve_rule_words("u1", words, [_msg(1, text)], final=False)
    assert (verdict.outcome, verdict.text) == ("record", text)
    assert verdict.reason == ("whole-no-words" if not words else "whole-unverified")


def test_quote_3_quote_6_cut_words_on_a_middle_message_are_sent_back_once() -> None:
    text = _sized(RULE, 450)
    first = resolve_rule_words("u1", "ever add new", [_msg(1, text)], final=False)
    assert (first.outcome, first.reason) == ("defect", "starts-inside-word")
    last = resolve_rule_words("u1", "ever add new", [_msg(1, text)], final=True)
    assert (last.outcome, last.reason, last.text) == ("record", "whole-unverified", text)


def test_quote_4_long_message_needs_words() -> None:
    text = _sized(RULE, 601)
    assert resolve_rule_words("u1", None, [_msg(1, text)], final=False).reason == "words-missing"
    assert resolve_rule_words("u1", None, [_msg(1, text)], final=False).outcome == "defect"
    assert resolve_rule_words("u1", None, [_msg(1, text)], final=True).outcome == "dropped"
    missing = resolve_rule_words("u1", "add deps", [_msg(1, text)], final=False)
    assert (missing.outcome, missing.reason, missing.rejected_quote) == ("defect", "words-not-found", True)
    ok = resolve_rule_words("u1", "Never add new dependencies", [_msg(1, text)], final=True)
    assert (ok.outcome, ok.text) == ("record", "Never add new dependencies")


def test_quote_4_boundary_is_600_characters() -> None:
    assert resolve_rule_words("u1", None, [_msg(1, _sized(RULE, 600))], final=False).outcome == "record"
    assert resolve_rule_words("u1", None, [_msg(1, _sized(RULE, 601))], final=False).outcome == "defect"


def test_quote_1_recorded_text_is_copied_from_the_message() -> None:
    text = _sized(RULE, 700)
    verdict = resolve_rule_words("u1", "dependencies without asking", [_msg(1, text)], final=False)
    assert verdict.text == quotable_text(text)[verdict.start : verdict.end]
    assert verdict.text is not None and verdict.text in text


def test_quote_counts_code_points_not_utf16_units() -> None:
    text = _sized("Never ship 🚀 on Fridays.", 300)
    assert len(text) == 300 and len(text.encode("utf-16-le")) // 2 > 300
    assert resolve_rule_words("u1", None, [_msg(1, text)], final=False).reason == "whole-short"


# --- QUOTE-5 / QUOTE-6 / QUOTE-11: exact words at boundaries ---


@pytest.mark.parametrize(
    "words", ["never use Lodash", "never  use lodash", "never use lodash.", "never use lodas h"]
)
def test_quote_5_match_is_exact(words: str) -> None:
    assert not find_words("never use lodash", words).found


def test_quote_5_only_crlf_is_normalized() -> None:
    assert find_words("first line\r\nsecond line", "line\nsecond").found
    assert find_words("first line\nsecond line", "line\r\nsecond").found
    assert not find_words("first line\rsecond line", "line\nsecond").found
    text = _sized("Run ruff\r\nbefore every commit.", 700)
    verdict = resolve_rule_words("u1", "Run ruff\r\nbefore every commit.", [_msg(1, text)], final=False)
    assert verdict.text == "Run ruff\nbefore every commit."
    assert normalize_newlines(normalize_newlines("a\r\r\nb")) == normalize_newlines("a\r\r\nb") == "a\nb"


@pytest.mark.parametrize(
    ("text", "words", "issue"),
    [
        ("never use lodash", "ever use lodash", "starts-inside-word"),
        ("never use lodash", "never use lod", "ends-inside-word"),
        ("don't push", "don", "ends-inside-word"),
        ("don’t push", "t push", "starts-inside-word"),
        ("use snake_case names", "case names", "starts-inside-word"),
        ("port 51730 only", "port 5173", "ends-inside-word"),
        ("die Größe zählt", "Grö", "ends-inside-word"),
        ("cafe\u0301 au lait", "cafe", "ends-inside-word"),
    ],
)
def test_quote_6_words_starting_or_ending_inside_a_word_are_refused(
    text: str, words: str, issue: str
) -> None:
    match = find_words(text, words)
    assert not match.found and match.issue == issue


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("never use lodash", "never use lodash"),
        ("don't push", "don't"),
        ("rock 'n' roll", "n"),
        ("it's 'quoted'", "quoted"),
        ("(never use lodash)", "never use lodash)"),
        ("start with DRY: please", "DRY:"),
        ("a-b", "b"),
    ],
)
def test_quote_6_words_at_boundaries_verify(text: str, words: str) -> None:
    assert find_words(text, words).found


def test_quote_11_first_boundary_occurrence_is_recorded() -> None:
    text = "lodash users: never use lodash. Again: never use lodash."
    match = find_words(text, "use lodash")
    assert (match.start, match.end) == (text.index("use lodash"), text.index("use lodash") + 10)
    cut_first = find_words("reuse it, then use it", "use it")
    assert cut_first.found and cut_first.start == 15


# --- QUOTE-7 / QUOTE-8 / QUOTE-9: binding ---


def test_quote_7_binds_to_newest_holder_and_takes_its_length_rule() -> None:
    words = "run ruff before every commit"
    holder_old = _msg(3, _sized(f"From now on {words}.", 640))
    holder_new = _msg(7, _sized(f"From now on {words}.", 650))
    short_holder = _msg(8, f"Please {words}.")
    cited = _msg(9, _sized("Unrelated long text.", 620))
    verdict = resolve_rule_words("u9", words, [holder_old, holder_new, cited], final=False)
    assert (verdict.message, verdict.cited, verdict.rebound, verdict.text) == ("u7", "u9", True, words)
    with_short = resolve_rule_words("u9", words, [holder_old, holder_new, short_holder, cited], final=False)
    assert (with_short.message, with_short.reason, with_short.text) == (
        "u8",
        "whole-short",
        short_holder.text,
    )


def test_quote_7_a_message_holding_its_words_keeps_them() -> None:
    words = "run ruff before every commit"
    older = _msg(3, _sized(f"From now on {words}.", 640))
    newer = _msg(7, _sized(f"From now on {words}.", 650))
    verdict = resolve_rule_words("u3", words, [older, newer], final=False)
    assert verdict.message == "u3" and not verdict.rebound


def test_quote_7_binding_respects_word_boundaries() -> None:
    cited = _msg(9, _sized("Unrelated long text.", 620))
    cut_holder = _msg(4, _sized("We never use lodash.", 640))
    verdict = resolve_rule_words("u9", "ever use lodash", [cut_holder, cited], final=False)
    assert (verdict.outcome, verdict.reason) == ("defect", "starts-inside-word")


def test_quote_8_text_only_outside_user_messages_is_rejected() -> None:
    assistant_text = "I will never force-push to main."  # only the assistant wrote this; it is not offered
    cited = _msg(2, _sized("Please be careful with git.", 650))
    verdict = resolve_rule_words("u2", "never force-push to main", [cited], final=True)
    assert verdict.outcome == "dropped" and verdict.text is None
    assert "never force-push to main" in assistant_text


def test_quote_9_binding_searches_full_text_not_the_prompt_excerpt() -> None:
    holder = _msg(4, "x " * 200 + "Tag every release with a signed tag.")
    cited = _msg(5, _sized("Unrelated long text.", 700))
    verdict = resolve_rule_words("u5", "Tag every release with a signed tag.", [holder, cited], final=False)
    assert (verdict.message, verdict.reason) == ("u4", "words")


def test_quote_unknown_or_empty_message_is_dropped_never_raises() -> None:
    assert resolve_rule_words("u9", "x", [_msg(1, "y")], final=False).reason == "unknown-message"
    assert resolve_rule_words("u1", None, [_msg(1, "")], final=False).reason == "empty-message"


def test_quote_16_excerpt_only_message_needs_words_verified_against_full_text() -> None:
    long_tail = "Context. " * 30 + "Keep every migration reversible."
    earlier = _msg(2, long_tail, excerpt_only=True)
    missing = resolve_rule_words("u2", None, [earlier], final=False)
    assert (missing.outcome, missing.reason) == ("defect", "words-missing")
    assert resolve_rule_words("u2", None, [earlier], final=True).outcome == "dropped"
    ok = resolve_rule_words("u2", "Keep every migration reversible.", [earlier], final=True)
    assert (ok.outcome, ok.reason, ok.text) == ("record", "words", "Keep every migration reversible.")
    short = _msg(3, "Context. " * 28 + "Be kind.", excerpt_only=True)
    assert len(short.text) <= 300
    whole = resolve_rule_words("u3", "Be kind.", [short], final=False)
    assert (whole.reason, whole.text) == ("whole-short", short.text)
    wrong = resolve_rule_words("u3", "Be nice.", [short], final=False)
    assert (wrong.outcome, wrong.reason) == ("defect", "words-not-found")


def test_quote_17_rejected_quotes_are_flagged_for_counting() -> None:
    rejected = resolve_rule_words("u1", "never add deps", [_msg(1, RULE)], final=False)
    kept = resolve_rule_words("u1", "Never add new dependencies", [_msg(1, RULE)], final=False)
    assert (rejected.rejected_quote, rejected.words_issue) == (True, "not-found")
    assert (kept.rejected_quote, kept.words_issue) == (False, None)


# --- properties ---

_ALPHABET = st.sampled_from(list("ab Zé1_'’ -.,\n\r\"“”„«»`>~Жß\u0301🚀"))
_TEXT = st.text(alphabet=_ALPHABET, max_size=60)


def _oracle_word(text: str, i: int) -> bool:
    ch = text[i]
    cat = unicodedata.category(ch)
    if ch == "_" or cat[0] in "LM" or cat == "Nd":
        return True
    return (
        ch in "'’"
        and 0 < i < len(text) - 1
        and unicodedata.category(text[i - 1])[0] == "L"
        and (unicodedata.category(text[i + 1])[0] == "L")
    )


def _oracle_boundary(text: str, i: int) -> bool:
    return i <= 0 or i >= len(text) or not (_oracle_word(text, i - 1) and _oracle_word(text, i))


@settings(max_examples=300)
@given(_TEXT, st.data())
def test_quote_6_property_substring_at_boundaries_verifies(text: str, data: st.DataObject) -> None:
    norm = normalize_newlines(text)
    assume(norm)
    i = data.draw(st.integers(0, len(norm) - 1))
    j = data.draw(st.integers(i + 1, len(norm)))
    assume(_oracle_boundary(norm, i) and _oracle_boundary(norm, j))
    assert find_words(text, norm[i:j]).found


@settings(max_examples=300)
@given(_TEXT, _TEXT)
def test_quote_6_property_verdict_matches_boundary_oracle(text: str, words: str) -> None:
    norm, w = normalize_newlines(text), normalize_newlines(words)
    expected = bool(w) and any(
        norm.startswith(w, p) and _oracle_boundary(norm, p) and _oracle_boundary(norm, p + len(w))
        for p in range(len(norm))
    )
    assert find_words(text, words).found == expected
    assert all(cut_at(norm, p) == (not _oracle_boundary(norm, p)) for p in range(len(norm) + 1))


@settings(max_examples=300)
@given(
    st.text(alphabet="abcdéЖz", min_size=2, max_size=12),
    st.text(alphabet=" .,-()!\n", max_size=5),
    st.text(alphabet=" .,-()!\n", max_size=5),
    st.data(),
)
def test_quote_6_property_substring_cut_inside_a_word_is_refused(
    word: str, before: str, after: str, data: st.DataObject
) -> None:
    a = data.draw(st.integers(0, len(word) - 1))
    b = data.draw(st.integers(a + 1, len(word)))
    assume(a > 0 or b < len(word))
    match = find_words(before + word + after, word[a:b])
    assert not match.found and match.issue in ("starts-inside-word", "ends-inside-word")


@settings(max_examples=200)
@given(st.lists(st.tuples(_TEXT, st.booleans()), min_size=1, max_size=6), _TEXT, st.booleans())
def test_quote_property_resolution_never_raises_and_copies_from_the_holder(
    texts: list[tuple[str, bool]], words: str, final: bool
) -> None:
    offered = [_msg(n, t, excerpt_only=e) for n, (t, e) in enumerate(texts, start=1)]
    for cited in offered:
        verdict = resolve_rule_words(cited.id, words, offered, final=final)
        assert verdict.outcome in ("record", "defect", "dropped")
        if verdict.outcome == "record":
            holder = next(m for m in offered if m.id == verdict.message)
            assert verdict.text == quotable_text(holder.text)[verdict.start : verdict.end]
        elif final:
            assert verdict.outcome == "dropped"
        judged_text(cited.text, verdict.start, verdict.end)
        excluded_ranges(cited.text)


@settings(max_examples=200)
@given(st.lists(st.booleans(), min_size=1, max_size=8), st.text(alphabet="abc .", max_size=40))
def test_quote_7_property_binding_picks_the_newest_holder(holds: list[bool], filler: str) -> None:
    words = "keep the tests green"
    assume(True in holds)
    offered = [
        _msg(n, _sized(f"{filler} {words}." if h else f"{filler} nothing.", 650))
        for n, h in enumerate(holds, 1)
    ]
    cited = _msg(len(holds) + 1, _sized("Unrelated long text.", 700))
    verdict = resolve_rule_words(cited.id, words, [*offered, cited], final=False)
    newest = max(n for n, h in enumerate(holds, 1) if h)
    assert (verdict.outcome, verdict.message, verdict.text) == ("record", f"u{newest}", words)


@settings(max_examples=300)
@given(st.text(max_size=80), st.text(max_size=30), st.booleans())
def test_quote_property_arbitrary_unicode_never_raises(text: str, words: str, final: bool) -> None:
    verdict = resolve_rule_words("u1", words, [_msg(1, text), _msg(2, words[::-1])], final=final)
    assert verdict.outcome in ("record", "defect", "dropped")
    find_words(text, words)
    judged_text(text, verdict.start, verdict.end)
    goal_objective_range(text + GOAL_TAGS[0] + words + GOAL_TAGS[1])
