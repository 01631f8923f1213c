"""``longhaul.json`` and ``score``'s reading of ``models.json`` accept exactly the JSON dialect pi accepts.

pi 0.73.1 parses ``models.json`` after its ``stripJsonComments`` (``//`` comments and trailing commas out,
strings untouched). These tests run pi's own function from its installed ``dist`` under node next to
:func:`strip_pi_json` on the same inputs, so a change in pi's dialect shows up here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from longhaul_daemon.pi_json import loads_pi_json, strip_pi_json

REPO = Path(__file__).resolve().parents[1]
PI_REGISTRY = (
    REPO
    / "client_shim"
    / "node_modules"
    / "@mariozechner"
    / "pi-coding-agent"
    / "dist"
    / "core"
    / "model-registry.js"
)

SAMPLES = [
    '{"a": 1}',
    '// a note\n{"a": 1, // why\n "b": [1, 2,],\n}\n',
    '{"url": "http://x//y", "s": "a,}", "q": "say \\"//hi\\","}',
    '{"a": [1, 2, ], "b": {"c": 3 , } , }',
    '{"a": 1 /* block */}',
    "{'a': 1}",
    '{"a": "line // not a comment", // comment "with quote\n "b": 2}',
    '{"a": 1,, }',
]


def _pi_strip(inputs: list[str]) -> list[str]:
    source = PI_REGISTRY.read_text(encoding="utf-8")
    match = re.search(r"function stripJsonComments\(input\) \{.*?\n\}\n", source, re.S)
    assert match, "pi's model-registry.js no longer has stripJsonComments: check the dialect again"
    script = (
        match.group(0)
        + "process.stdout.write(JSON.stringify(JSON.parse(process.argv[1]).map(stripJsonComments)));"
    )
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, "-e", script, json.dumps(inputs)], capture_output=True, text=True, timeout=60, check=True
    )
    result = json.loads(done.stdout)
    assert isinstance(result, list)
    return [str(item) for item in result]


@pytest.mark.skipif(not PI_REGISTRY.is_file(), reason="pi is not installed in client_shim (make install)")
def test_the_dialect_strips_what_pis_own_function_strips() -> None:
    assert [strip_pi_json(text) for text in SAMPLES] == _pi_strip(SAMPLES)


def test_comments_and_trailing_commas_parse_and_strings_are_left_alone() -> None:
    assert loads_pi_json(SAMPLES[1]) == {"a": 1, "b": [1, 2]}
    assert loads_pi_json(SAMPLES[2]) == {"url": "http://x//y", "s": "a,}", "q": 'say "//hi",'}


@pytest.mark.parametrize("text", [SAMPLES[4], SAMPLES[5], '{"a": NaN}', '{"a": Infinity}', '{"a": 1,, }'])
def test_what_pi_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        loads_pi_json(text)
