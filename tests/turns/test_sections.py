"""The five sections (TURNS-2): their order, their per-turn schemas (issue 14 point 6), finding an answer."""

from __future__ import annotations

import json

from longhaul_daemon.passes.turns.sections import SECTIONS, find_section, section_schema, wants


def test_turns2_the_sections_come_in_the_fixed_order() -> None:
    assert SECTIONS == ("narrative", "objective", "labels", "decisions", "now")


def test_each_turn_has_its_own_strict_bounded_schema() -> None:
    narrative = section_schema("narrative").schema
    assert narrative["required"] == ["narrative", "excuses"] and narrative["additionalProperties"] is False
    excuse = narrative["properties"]["excuses"]
    assert excuse["maxItems"] == 1 and excuse["items"]["properties"]["check"]["enum"] == [
        "modified-files-named"
    ]
    assert section_schema("objective").schema["properties"]["objective"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    labels = section_schema("labels", label_ids=["u1", "u3"], required=2).schema["properties"]["labels"]
    assert (labels["minItems"], labels["maxItems"]) == (2, 2)
    assert labels["items"]["properties"]["msg"] == {"type": "string", "enum": ["u1", "u3"]}
    decisions = section_schema("decisions", open_errors=["E4"]).schema["properties"]
    assert decisions["openErrors"]["items"] == {"type": "string", "enum": ["E4"]}
    assert decisions["decisions"]["maxItems"] == 8 and decisions["fixed"]["maxItems"] == 8
    assert section_schema("now").name == "now_section"
    assert "maxLength" not in json.dumps([section_schema(s).schema for s in SECTIONS])  # OpenAI strict mode


def test_an_answer_is_the_first_object_of_the_sections_shape_bare_or_fenced() -> None:
    text = 'Sure.\n```json\n{"status": "ok"}\n{"now": "Add tests next.", "excuses": []}\n```'
    assert find_section(text, "now") == ({"now": "Add tests next.", "excuses": []}, "answer")
    assert find_section(text, "narrative") == (None, "foreign")  # only objects of other shapes: an echo
    assert find_section('{"deadEnds": []}', "decisions")[1] == "answer"  # any list key marks decisions
    assert find_section('{"now": "x", "a": 1, "b": 2, "c": 3}', "now") == (None, "foreign")  # 3 unknown keys
    assert find_section('{"labels": [{"msg": "u1", "label": "rule"}', "labels") == (None, "begun")


def test_the_stream_of_a_turn_ends_at_an_object_of_its_section() -> None:
    assert wants("labels")({"labels": []}) and not wants("labels")({"narrative": "x"})
    assert wants("objective")({"objective": None})
