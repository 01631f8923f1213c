"""Client-sent ids, codes and model names are logged and counted only in their real shapes (issue 12/8)."""

from __future__ import annotations

import json

import pytest

from longhaul_daemon.log.fields import (
    error_class_field,
    model_spec_field,
    pass_id_field,
    reason_field,
    session_id_field,
    shape_log_fields,
    token_field,
)
from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.rpc.recording import compaction_fields

BIDI = "\u202eevil\u202c"


@pytest.mark.parametrize("good", ["0123456789ab", "deadbeef0000", None])
def test_a_real_pass_id_passes(good: str | None) -> None:
    assert pass_id_field(good) == good


@pytest.mark.parametrize("bad", ["0123456789AB", "0123456789a", "x" * 256, BIDI, "0123456789ab\n"])
def test_any_other_pass_id_becomes_its_length(bad: str) -> None:
    assert pass_id_field(bad) == f"invalid ({len(bad)} chars)"


@pytest.mark.parametrize("good", ["timeout", "daemon-down", "stand-down", "startup", "e2"])
def test_reason_codes_are_ascii_lowercase_digits_and_dashes(good: str) -> None:
    assert reason_field(good) == good


@pytest.mark.parametrize("bad", ["Timeout", "tïmeout", "٣", "a_b", "-x", "a" * 65, "", BIDI, "a b"])
def test_unicode_alphanumerics_are_not_reason_codes(bad: str) -> None:
    assert reason_field(bad) == f"invalid ({len(bad)} chars)"


def test_error_classes_tokens_and_their_bounds() -> None:
    assert error_class_field("errors.ShimError") == "errors.ShimError"
    assert error_class_field("Type Error") == "invalid (10 chars)"
    assert token_field("anthropic-messages") == "anthropic-messages"
    assert token_field("req_01:ab.c-d") == "req_01:ab.c-d"
    assert token_field("a" * 129) == "invalid (129 chars)"
    assert token_field("x\x1b[31m") == "invalid (6 chars)"


def test_model_specs_keep_printable_ascii_and_hash_the_rest_distinctly() -> None:
    assert model_spec_field("fake/fake-model") == "fake/fake-model"
    one, two = model_spec_field("p/" + "é" * 10), model_spec_field("p/" + "é" * 11)
    assert one != two
    assert one is not None and one.startswith("#") and one.endswith("(12 chars)") and one.isascii()
    assert model_spec_field("p/" + "m" * 300) == model_spec_field("p/" + "m" * 300)
    assert "m" * 20 not in str(model_spec_field("p/" + "m" * 300))
    assert model_spec_field("p/with space") != "p/with space"


def test_session_ids_are_kept_when_they_look_like_pi_s() -> None:
    uuid = "0199a3c4-7d2e-7b10-9a55-2f4e3b1c0d9e"
    assert session_id_field(uuid) == uuid
    assert str(session_id_field("s" * 4096)).endswith("(4096 chars)")


def test_the_log_processor_shapes_the_keys_it_knows_and_leaves_the_rest() -> None:
    event = {
        "event": "compacted",
        "pass_id": BIDI,
        "reason": "ok",
        "api": "x" * 300,
        "model": "p/\x07",
        "span": 3,
        "text_like": "left alone",
        "error_class": None,
    }
    out = shape_log_fields(None, "info", dict(event))
    assert out["pass_id"] == f"invalid ({len(BIDI)} chars)"
    assert out["reason"] == "ok" and out["span"] == 3 and out["text_like"] == "left alone"
    assert out["api"] == "invalid (300 chars)"
    assert str(out["model"]).startswith("#") and out["error_class"] is None


def test_the_compaction_records_route_and_reasoning_are_written_in_their_shapes() -> None:
    params = CompactParams.model_validate(
        {
            "session": {"cwd": "/w", "sessionId": "s", "agentDir": "/a", "piVersion": "0.73.1"},
            "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 1},
            "branchEntries": [],
        }
    )
    result = CompactResult.model_validate(
        {
            "passId": "0123456789ab",
            "span": 1,
            "compaction": {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 1, "details": {}},
            "diagnostics": {
                "narrative": {"kind": "whole", "reasoning": "high" + BIDI},
                "route": {"configured": "p/" + BIDI, "used": "p/ok-model", "why": "failed:FatalError"},
            },
        }
    )
    fields = compaction_fields(params, result, 5)
    route, narrative = fields["route"], fields["narrative"]
    assert isinstance(route, dict) and isinstance(narrative, dict)
    assert route["used"] == "p/ok-model" and str(route["configured"]).startswith("#")
    assert narrative["reasoning"] == f"invalid ({len('high' + BIDI)} chars)"
    assert BIDI not in json.dumps(fields, ensure_ascii=False)
