"""Where a session's record log lives and what every record carries (LOG-1..LOG-7, LOG-14..LOG-16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.log.records import (
    RecordLog,
    error_fields,
    home_as_tilde,
    log_path,
    pi_version_verified,
)
from longhaul_daemon.protocol import SessionFacts


def facts(tmp_path: Path, **env: str) -> SessionFacts:
    (tmp_path / "agent").mkdir(exist_ok=True)
    (tmp_path / "proj").mkdir(exist_ok=True)
    return SessionFacts.model_validate(
        {
            "cwd": str(tmp_path / "proj"),
            "sessionId": "019a-session",
            "agentDir": str(tmp_path / "agent"),
            "piVersion": "0.73.1",
            "model": {"provider": "fake", "id": "fake-model"},
            "thinkingLevel": "medium",
            "env": env,
        }
    )


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_log1_default_path_is_in_the_agent_dir_the_shim_sent(tmp_path: Path) -> None:
    session = facts(tmp_path)
    assert log_path(session) == tmp_path / "agent" / "logs" / "compaction-state.jsonl"


@pytest.mark.parametrize("off", ["off", "none", "0", "false", "no", "", "  OFF ", "False", "\tNo\n", "NONE"])
def test_log3_off_values_write_nothing_and_create_no_directory(tmp_path: Path, off: str) -> None:
    session = facts(tmp_path, PI_COMPACT_STATE_DEBUG=off)
    assert log_path(session) is None
    log = RecordLog()
    log.write(session, "extension-loaded", {})
    assert list((tmp_path / "agent").iterdir()) == []
    assert list((tmp_path / "proj").iterdir()) == []
    assert log.files() == []


def test_log2_value_1_is_a_file_named_1_in_the_working_directory(tmp_path: Path) -> None:
    session = facts(tmp_path, PI_COMPACT_STATE_DEBUG="1")
    RecordLog().write(session, "extension-loaded", {})
    assert [r["event"] for r in read(tmp_path / "proj" / "1")] == ["extension-loaded"]
    assert not (tmp_path / "agent" / "logs").exists()


def test_log2_paths_are_literal_relative_to_cwd_without_tilde_expansion(tmp_path: Path) -> None:
    assert (
        log_path(facts(tmp_path, PI_COMPACT_STATE_DEBUG="sub/x.jsonl")) == tmp_path / "proj" / "sub/x.jsonl"
    )
    assert (
        log_path(facts(tmp_path, PI_COMPACT_STATE_DEBUG="~/x.jsonl")) == tmp_path / "proj" / "~" / "x.jsonl"
    )
    absolute = str(tmp_path / "abs.jsonl")
    assert log_path(facts(tmp_path, PI_COMPACT_STATE_DEBUG=absolute)) == Path(absolute)
    assert log_path(facts(tmp_path, PI_COMPACT_STATE_DEBUG=" on ")) == tmp_path / "proj" / " on "


def test_log4_log6_record_head(tmp_path: Path) -> None:
    session = facts(tmp_path)
    RecordLog().write(session, "compacted", {"span": 2})
    (record,) = read(tmp_path / "agent" / "logs" / "compaction-state.jsonl")
    assert record["v"] == 1
    assert record["event"] == "compacted"
    assert record["ts"].endswith("Z") and "T" in record["ts"]
    assert record["session"] == {
        "cwd": str(tmp_path / "proj"),
        "sessionId": "019a-session",
        "model": "fake/fake-model",
        "thinkingLevel": "medium",
    }
    assert record["span"] == 2


def test_log6_session_without_model(tmp_path: Path) -> None:
    session = facts(tmp_path).model_copy(update={"model": None, "thinkingLevel": None})
    RecordLog().write(session, "compacted", {})
    (record,) = read(tmp_path / "agent" / "logs" / "compaction-state.jsonl")
    assert record["session"]["model"] is None and record["session"]["thinkingLevel"] is None


def test_log7_home_replaced_first_then_cut_to_200() -> None:
    home = "/home/" + "h" * 50
    text = f"open {home}/{'d' * 300}"
    fields = error_fields(error_class="OSError", error=text, home=home)
    assert fields["errorClass"] == "OSError"
    error = fields["error"]
    assert isinstance(error, str) and len(error) == 200 and error.startswith("open ~/ddd")
    assert home_as_tilde("x /", home="/") == "x /"  # a root home is never replaced


def test_log7_log15_exception_fields(tmp_path: Path) -> None:
    try:
        raise ValueError(f"bad {Path.home()}/secret")
    except ValueError as exc:
        fields = error_fields(exc)
    assert fields["errorClass"] == "ValueError"
    assert fields["error"] == "bad ~/secret"
    stack = fields["stack"]
    assert isinstance(stack, str) and "Traceback" in stack and str(Path.home()) + "/" not in stack


@pytest.mark.parametrize(("value", "kept"), [("1", True), ("true", False), (" 1", False), ("", False)])
def test_log14_log15_excerpts_and_stacks_only_with_exactly_1(tmp_path: Path, value: str, kept: bool) -> None:
    session = facts(tmp_path, PI_COMPACT_STATE_DEBUG_EXCERPTS=value, PI_COMPACT_STATE_DEBUG_STACK=value)
    RecordLog().write(session, "fallback", {"excerpts": ["quote"], "stack": "Traceback", "reason": "x"})
    (record,) = read(tmp_path / "agent" / "logs" / "compaction-state.jsonl")
    assert ("excerpts" in record, "stack" in record) == (kept, kept)
    assert record["reason"] == "x"


def test_log16_pi_version_verified_constant() -> None:
    assert pi_version_verified("0.73.1") is True
    assert pi_version_verified("0.73.2") == "line"
    assert pi_version_verified("0.74.0") is False
    assert pi_version_verified("garbage") is False


def test_log12_a_record_that_cannot_render_still_never_raises(tmp_path: Path) -> None:
    loop: dict[str, object] = {}
    loop["self"] = loop
    log = RecordLog()
    log.write(facts(tmp_path), "compaction", {"bad": loop})
    (record,) = read(tmp_path / "agent" / "logs" / "compaction-state.jsonl")
    assert record["event"] == "compaction" and record["renderFailed"] is True


def test_log_files_lists_paths_sizes_and_drops(tmp_path: Path) -> None:
    log = RecordLog()
    session = facts(tmp_path)
    log.write(session, "compacted", {})
    path = tmp_path / "agent" / "logs" / "compaction-state.jsonl"
    path.unlink()
    path.mkdir()
    log.write(session, "compacted", {})
    assert log.files() == [{"path": str(path), "bytes": 0, "dropped": 1}]


def test_the_sinks_are_bounded_to_the_newest_paths_written(tmp_path: Path) -> None:
    """Each client names its own log path: made-up ones must not grow the table (and status) for ever."""
    log = RecordLog(max_sinks=3)
    for n in range(5):
        log.write(facts(tmp_path, PI_COMPACT_STATE_DEBUG=f"log-{n}"), "extension-loaded", {})
    log.write(
        facts(tmp_path, PI_COMPACT_STATE_DEBUG="log-2"), "extension-loaded", {}
    )  # written again: newest
    assert [Path(f["path"]).name for f in log.files()] == ["log-3", "log-4", "log-2"]
    assert all((tmp_path / "proj" / f"log-{n}").exists() for n in range(5))
