"""Each call's schema keys its labels by the offered messages, holds each to its LABEL-1 forms, and leaves the
shared template alone; the reader takes the keyed form as the list it stands for (DIFF-5, ours).

A small model under the old list schema skipped one message, named another twice, or looped on the prompt's
example id until its output cap; keyed, every offered id is one required property, in order.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import SecretStr

from longhaul_daemon.models import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.providers import PROVIDERS
from longhaul_daemon.models.request import default_compat
from longhaul_daemon.models.structured import gemini_schema
from longhaul_daemon.passes.answers.call_schemas import (
    LABEL_FORMS_CAP,
    LEDGER_ENUM_CAP,
    answer_schema,
    keyed_labels,
    label_call_schema,
    label_forms,
    lift_targets,
    question_schema,
)
from longhaul_daemon.passes.answers.extract import answer_shaped, label_items, parse_answer
from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, OfferedMessage
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA
from longhaul_daemon.state.model import Rule


def offered(*ids: str, long: tuple[str, ...] = ()) -> list[OfferedMessage]:
    return [OfferedMessage(i, "x " * LONG_MESSAGE if i in long else f"message {i}") for i in ids]


def test_diff_5_labels_are_keyed_by_every_offered_id_in_order() -> None:
    schema = answer_schema(offered("u2", "u10", "u3")).schema
    labels = schema["properties"]["labels"]
    assert list(labels["properties"]) == ["u2", "u10", "u3"]
    assert labels["required"] == ["u2", "u10", "u3"] and labels["additionalProperties"] is False
    assert schema["required"][:3] == ["labels", "narrative", "now"]


def test_diff_5_repeated_ids_collapse() -> None:
    labels = keyed_labels(["u2", "u1", "u2"])
    assert labels["required"] == ["u2", "u1"]


def test_lift_1_a_label_may_name_only_the_lifts_code_s_reading_would_pass() -> None:
    """The forms of each message are ``rule``, ``not a rule`` and the lifts the store's check passes on its
    words: a rule in force, or an earlier message read as the rule it would give (LABEL-8)."""
    rules = [Rule(id="R1", message="u1", words="Never push to main.", span=1, seq=1)]
    messages = [
        OfferedMessage("u4", "Tabs for indentation in every file."),
        OfferedMessage("u5", "Fix the parser."),
        OfferedMessage("u6", "The never push to main rule no longer applies."),
        OfferedMessage("u7", "Forget the tabs for indentation rule, that no longer applies."),
    ]
    lifts = lift_targets(messages, rules)
    assert lifts == {"u6": ["R1"], "u7": ["u4"]}
    labels = answer_schema(messages, lifts=lifts).schema["properties"]["labels"]["properties"]
    enums = {msg: prop["properties"]["label"]["enum"] for msg, prop in labels.items()}
    assert enums["u5"] == ["rule", "not a rule"]
    assert enums["u6"] == ["rule", "not a rule", "lifts R1", "rule and lifts R1"]
    assert enums["u7"] == ["rule", "not a rule", "lifts u4", "rule and lifts u4"]
    assert labels["u5"]["required"] == ["label"] and labels["u5"]["additionalProperties"] is False
    lifted = [rules[0].model_copy(update={"lifted": True})]
    assert lift_targets(messages[1:3], lifted) == {}  # a lifted rule is not lifted again


def test_label_1_every_offered_form_is_a_label_the_reader_takes() -> None:
    from longhaul_daemon.passes.answers.labels import parse_label

    for form in label_forms(["R1", "u3"]):
        assert parse_label(form) is not None, form


def test_quote_4_a_long_message_takes_label_and_words_a_short_one_the_label_alone() -> None:
    labels = answer_schema(offered("u1", "u2", long=("u2",)), lifts={}).schema["properties"]["labels"]
    short, long = labels["properties"]["u1"], labels["properties"]["u2"]
    assert short["type"] == "object" and short["required"] == ["label"]
    assert long["type"] == "object" and long["required"] == ["label", "words"]
    assert long["properties"]["label"]["enum"][:2] == ["rule", "not a rule"]
    assert {"type": "null"} in long["properties"]["words"]["anyOf"]


def test_takeover_20_a_picked_message_may_be_null() -> None:
    labels = answer_schema(offered("u1", "u2"), optional={"u1"}).schema["properties"]["labels"]
    assert labels["properties"]["u1"]["anyOf"][1] == {"type": "null"}
    assert labels["required"] == ["u1", "u2"]  # still written, as null: OpenAI's strict mode requires all


def test_past_the_cap_labels_are_plain_strings_still_keyed() -> None:
    ids = [f"u{n}" for n in range(1, 41)]
    many = {msg: [f"R{n}" for n in range(1, 11)] for msg in ids}  # 40 x 22 forms
    labels = keyed_labels(ids, lifts=many)
    assert all(p["properties"]["label"] == {"type": "string"} for p in labels["properties"].values())
    assert labels["required"] == ids
    few = keyed_labels(ids, lifts={"u3": ["R1"]})
    assert sum(len(p["properties"]["label"]["enum"]) for p in few["properties"].values()) <= LABEL_FORMS_CAP
    free = keyed_labels(ids[:2])["properties"]["u1"]["properties"]["label"]
    assert free == {"type": "string"}  # no reading given: free


def test_the_label_call_keys_only_the_asked_messages() -> None:
    schema = label_call_schema(offered("u3", "u7", long=("u7",)), lifts={"u3": ["R2"]}).schema
    labels = schema["properties"]["labels"]
    assert labels["required"] == ["u3", "u7"] and list(schema["properties"]) == ["labels"]
    enum = labels["properties"]["u3"]["properties"]["label"]["enum"]
    assert enum == ["rule", "not a rule", "lifts R2", "rule and lifts R2"]
    assert labels["properties"]["u7"]["required"] == ["label", "words"]


def test_lift_14_the_question_call_keys_the_asked_messages_and_leaves_the_labels_free() -> None:
    labels = question_schema(["u5", "u9", "u5"]).schema["properties"]["labels"]
    assert [p["properties"]["label"] for p in labels["properties"].values()] == [{"type": "string"}] * 2
    assert labels["required"] == ["u5", "u9"]


def test_gemini_keeps_the_offered_order_not_the_alphabet() -> None:
    wire = gemini_schema(answer_schema(offered("u2", "u10"), lifts={}).schema)
    assert wire["properties"]["labels"]["propertyOrdering"] == ["u2", "u10"]
    assert wire["properties"]["labels"]["properties"]["u2"]["properties"]["label"]["enum"][0] == "rule"


@pytest.mark.parametrize("api", sorted(PROVIDERS))
def test_no_provider_changes_the_shared_template(api: str) -> None:
    before = copy.deepcopy(dict(ANSWER_SCHEMA.schema))
    target = ModelTarget(
        api=api,
        provider="test",
        model_id="test-model",
        base_url="http://127.0.0.1:9",
        api_key=SecretStr("sk-test"),
        compat=replace(default_compat(api)),
    )
    for schema in (ANSWER_SCHEMA, answer_schema(offered("u1", "u2"), optional={"u1"})):
        request = ModelRequest(
            target=target,
            system="You summarise.",
            messages=(Message("user", "hello"),),
            max_output_tokens=256,
            output_schema=schema,
        )
        call, _ = PROVIDERS[api].prepare(request)
        json.dumps(call.body)
    assert dict(ANSWER_SCHEMA.schema) == before


def test_one_call_s_schema_does_not_leak_into_the_next() -> None:
    first = answer_schema(offered("u1", "u2"))
    second = answer_schema(offered("u7"))
    assert list(first.schema["properties"]["labels"]["properties"]) == ["u1", "u2"]
    assert list(second.schema["properties"]["labels"]["properties"]) == ["u7"]
    assert ANSWER_SCHEMA.schema["properties"]["labels"]["type"] == "array"  # the template keeps its list


# The reader: the keyed form is the list form it stands for.

OFFERED = ["u3", "u4", "u7"]


def _answer(labels: Any) -> dict[str, Any]:
    return {"labels": labels, "narrative": "n", "now": "w"}


def test_diff_5_a_keyed_answer_reads_as_the_same_list_answer() -> None:
    keyed = {"u3": {"label": "rule", "words": None}, "u4": "not a rule", "u7": "lifts u3"}
    listed = [
        {"msg": "u3", "label": "rule"},
        {"msg": "u4", "label": "not a rule"},
        {"msg": "u7", "label": "lifts u3"},
    ]
    a = parse_answer(json.dumps(_answer(keyed)), OFFERED, ())
    b = parse_answer(json.dumps(_answer(listed)), OFFERED, ())
    assert a.parsed and not a.defects
    assert a.answer.labels == b.answer.labels
    assert {i.msg: i.label for i in a.answer.labels}["u7"] == Label("lifts", ("u3",))


def test_label_2_a_null_or_missing_key_is_a_missing_label_unless_optional() -> None:
    parsed = parse_answer(json.dumps(_answer({"u3": "rule", "u4": None})), OFFERED, ())
    assert [(d.code, d.msg) for d in parsed.defects] == [("missing-label", "u4"), ("missing-label", "u7")]
    optional = parse_answer(
        json.dumps(_answer({"u3": "rule", "u4": None})), OFFERED, (), label_optional={"u4", "u7"}
    )
    assert not optional.defects


def test_label_1_a_keyed_value_of_the_wrong_kind_is_a_defect_for_its_message() -> None:
    parsed = parse_answer(json.dumps(_answer({"u3": "rule", "u4": ["rule"], "u7": "maybe"})), OFFERED, ())
    assert [(d.code, d.msg) for d in parsed.defects] == [("wrong-type", "u4"), ("bad-label", "u7")]


def test_label_3_a_key_that_was_not_offered_is_dropped() -> None:
    parsed = parse_answer(
        json.dumps(_answer({"u3": "rule", "u4": "rule", "u7": "rule", "u9": "rule"})), OFFERED, ()
    )
    assert not parsed.defects and parsed.dropped == {"labels-not-offered": 1}


def test_diff_17_keyed_labels_have_the_answer_s_shape_and_other_objects_do_not() -> None:
    assert answer_shaped({"labels": {"u1": "rule"}})
    assert answer_shaped({"labels": {}, "narrative": "n", "now": "w"})
    assert not answer_shaped({"labels": {"bug": 3, "docs": 1}})  # a tool's own "labels" object
    assert label_items({"u1": "rule", "u2": None}) == [{"msg": "u1", "label": "rule"}]
    assert label_items([{"msg": "u1"}]) == [{"msg": "u1"}]


def test_diff_17_a_raw_line_break_inside_a_string_does_not_unmake_the_answer() -> None:
    """A weak server's grammar let a raw line break into the narrative; the answer is still the answer (the
    prose is cleaned before it is stored, as any model text)."""
    raw = '{"labels": {"u3": {"label": "rule"}, "u4": {"label": "rule"}, "u7": {"label": "rule"}}, '
    raw += '"narrative": "Fixed it.\n\nThen stopped.", "now": "w"}'
    parsed = parse_answer(raw, OFFERED, ())
    assert parsed.parsed and not parsed.defects and parsed.answer.narrative == "Fixed it.\n\nThen stopped."


# Evidence and `fixed` held to the ledger ids the prompt shows (DIFF-14, ours)


def _evidence(schema: Any, key: str = "decisions") -> Any:
    return schema["properties"][key]["items"]["properties"]["evidence"]


def test_diff_14_evidence_and_fixed_are_held_to_the_ids_the_prompt_shows() -> None:
    """A small model wrote dates and paths as evidence until its output cap; held to the shown ids it can
    cite only those, and a `fixed` claim pairs a shown error with a shown command."""
    schema = answer_schema(offered("u1"), ledger_shown=["C1", "C4", "E2"]).schema
    for key in ("decisions", "deadEnds"):
        assert _evidence(schema, key)["items"] == {"type": "string", "enum": ["C1", "C4", "E2"]}
        assert _evidence(schema, key)["maxItems"] == 6
    fixed = schema["properties"]["fixed"]["items"]["properties"]
    assert fixed["error"] == {"type": "string", "enum": ["E2"]}
    assert fixed["by"] == {"type": "string", "enum": ["C1", "C4"]}
    assert _evidence(ANSWER_SCHEMA.schema)["items"] == {"type": "string"}  # the template is left alone


def test_diff_14_with_nothing_to_cite_the_lists_hold_no_ids() -> None:
    schema = answer_schema(offered("u1"), ledger_shown=[]).schema
    assert _evidence(schema)["maxItems"] == 0 and _evidence(schema, "deadEnds")["maxItems"] == 0
    assert schema["properties"]["fixed"]["maxItems"] == 0
    no_error = answer_schema(offered("u1"), ledger_shown=["C1"]).schema
    assert no_error["properties"]["fixed"]["maxItems"] == 0  # no open error shown: nothing to fix
    assert _evidence(no_error)["items"]["enum"] == ["C1"]


def test_a_big_ledger_or_an_unknown_one_leaves_evidence_free() -> None:
    many = [f"C{n}" for n in range(1, LEDGER_ENUM_CAP + 2)]
    assert _evidence(answer_schema(offered("u1"), ledger_shown=many).schema)["items"] == {"type": "string"}
    assert _evidence(answer_schema(offered("u1")).schema)["items"] == {"type": "string"}


def test_the_held_schema_stays_within_openai_s_enum_limit() -> None:
    """OpenAI refuses a schema of more than 1,000 enum values: labels at their cap and the most ledger ids
    evidence is held to stay under it."""
    forms = len(label_forms(["R1"]))
    ids = [f"u{n}" for n in range(1, LABEL_FORMS_CAP // forms + 1)]
    shown = [f"C{n}" for n in range(1, LEDGER_ENUM_CAP // 2 + 1)] + [f"E{n}" for n in range(1, 31)]
    schema = answer_schema(offered(*ids), lifts={i: ["R1"] for i in ids}, ledger_shown=shown).schema
    assert _evidence(schema)["items"]["enum"] == shown

    def enums(node: Any) -> int:
        if isinstance(node, dict):
            return len(node.get("enum", ())) + sum(enums(v) for k, v in node.items() if k != "enum")
        return sum(enums(v) for v in node) if isinstance(node, list) else 0

    assert LABEL_FORMS_CAP - forms < enums(schema) - 3 * len(shown) <= LABEL_FORMS_CAP
    assert enums(schema) <= 1000
