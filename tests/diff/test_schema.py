"""The per-call answer schema shares its unchanged parts with the template, so it must equal a full copy's.

:func:`answer_schema` copies only the path down to ``labels`` (issue 10); these tests hold it to the deep-copy
result it replaced, and check that neither building it nor any provider's wire form changes the template.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from pydantic import SecretStr

from longhaul_daemon.models import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.providers import PROVIDERS
from longhaul_daemon.models.request import default_compat
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA, answer_schema

CASES: list[tuple[list[str], int]] = [
    ([], 0),
    ([], 3),
    (["u1"], 1),
    (["u1", "u2", "u3"], 2),
    (["u2", "u1", "u2"], 5),  # repeats collapse, the bound is held to the ids
    (["u1", "u4"], -1),
]


def _deep_copied(offered: Sequence[str], required: int) -> dict[str, Any]:
    """The schema as the deep-copying version built it."""
    schema = copy.deepcopy(dict(ANSWER_SCHEMA.schema))
    labels = schema["properties"]["labels"]
    ids = list(dict.fromkeys(offered))
    labels["minItems"], labels["maxItems"] = min(max(required, 0), len(ids)), len(ids)
    if ids:
        labels["items"]["properties"]["msg"] = {"type": "string", "enum": ids}
    return schema


@pytest.mark.parametrize(("offered", "required"), CASES)
def test_the_schema_equals_a_deep_copy_with_the_labels_bound(offered: list[str], required: int) -> None:
    before = copy.deepcopy(dict(ANSWER_SCHEMA.schema))
    built = answer_schema(offered, required=required)
    expected = _deep_copied(offered, required)
    assert built.schema == expected
    assert json.dumps(built.schema) == json.dumps(expected)  # key order too: it is what the model is sent
    assert (built.name, built.description) == (ANSWER_SCHEMA.name, ANSWER_SCHEMA.description)
    assert dict(ANSWER_SCHEMA.schema) == before


def test_one_call_s_schema_does_not_leak_into_the_next() -> None:
    first = answer_schema(["u1", "u2"], required=2)
    second = answer_schema(["u7"], required=0)
    assert first.schema == _deep_copied(["u1", "u2"], 2)
    assert second.schema == _deep_copied(["u7"], 0)


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
    for schema in (ANSWER_SCHEMA, answer_schema(["u1", "u2"], required=1)):
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
