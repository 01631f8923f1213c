"""Each crash the socket fuzzer found, replayed at the unit where it was fixed (issue 12, item 6).

The fuzzer reports a frame; these pin the root cause: a value of the wrong type used as a set member or a
dict key, a path no file can have, a header HTTP cannot carry. Each raised before its fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from longhaul_daemon.log.report import build_report
from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import FatalError
from longhaul_daemon.models.client import complete
from longhaul_daemon.models.http import make_client
from longhaul_daemon.models.request import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.routing import compat_from_pi
from longhaul_daemon.protocol import Preparation, SessionFacts
from longhaul_daemon.rpc.recording import report_for_session
from longhaul_daemon.tools.strip import plan_strip
from longhaul_daemon.transcript.messages import select_span
from longhaul_daemon.user_settings import load_settings

UNHASHABLE: list[Any] = [["x"], {"a": 1}]
NO_SUCH_PATHS = ["/tmp/a\x00b", "/tmp/\ud800", "/tmp/" + "x" * 5000]


@pytest.mark.parametrize("path", NO_SUCH_PATHS, ids=["nul", "surrogate", "too-long"])
def test_settings_and_the_report_read_a_path_no_file_can_have_as_absent(path: str) -> None:
    settings = load_settings(path, path)  # `route` with such an agentDir answered -32603
    assert settings.summarizer is None
    assert build_report(path, "/tmp", None).records == 0  # `report` did too


@pytest.mark.anyio
async def test_the_report_method_answers_when_the_log_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*_args: object) -> None:
        raise OSError(5, "Input/output error")  # EIO: not "absent", and nothing a request can fix

    monkeypatch.setattr("longhaul_daemon.rpc.recording.build_report", unreadable)
    facts = SessionFacts(cwd=str(tmp_path), sessionId="s", agentDir=str(tmp_path), piVersion="0.73.1")
    result = await report_for_session(facts)
    assert result.records == 0
    assert result.digest == "Longhaul report: the log could not be read (OSError)."


@pytest.mark.parametrize("value", UNHASHABLE, ids=["list", "dict"])
def test_strip_reads_an_entry_type_of_any_type(value: Any) -> None:
    branch = [
        {"type": value, "id": "e1", "message": {"role": "assistant", "timestamp": 1}},
        {"type": "compaction", "id": "c1", "firstKeptEntryId": "e1", "details": {"compactor": "longhaul"}},
    ]
    assert plan_strip([{"role": "user"}], branch).cutoff in (None, "c1")


@pytest.mark.parametrize("value", UNHASHABLE, ids=["list", "dict"])
def test_compat_reads_a_thinking_format_of_any_type(value: Any) -> None:
    assert compat_from_pi("openai-completions", {"thinkingFormat": value}) is not None


@pytest.mark.parametrize("value", UNHASHABLE, ids=["list", "dict"])
def test_the_span_reads_entry_ids_of_any_type(value: Any) -> None:
    branch = [{"type": "message", "id": value, "message": {"role": "user", "content": "hi"}}]
    prep = Preparation(firstKeptEntryId="e9", messagesToSummarize=[{"entryRef": "e1"}], tokensBefore=1)
    assert select_span(prep, branch) == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("key", "headers"),
    [("sk-\u2028-0123456789", {}), ("sk-plain-0123456789", {"x-team": "caf\u00e9-0123456789"})],
    ids=["key", "header"],
)
async def test_a_credential_http_cannot_carry_fails_fatally_before_any_io(
    key: str, headers: dict[str, str]
) -> None:
    target = ModelTarget(
        api="openai-completions",
        provider="p",
        model_id="m",
        base_url="http://127.0.0.1:9/v1",  # nothing listens: any attempt would be a connection error instead
        api_key=SecretStr(key),
        headers=headers,
    )
    request = ModelRequest(target=target, system="s", messages=(Message("user", "u"),), max_output_tokens=16)
    async with make_client() as client:
        with pytest.raises(FatalError) as caught, anyio.fail_after(10):
            await complete(request, budget=Budget.after(5.0), client=client)
    assert caught.value.code == "unsendable-header"
