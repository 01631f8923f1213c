"""longhaul.json: agent file, project override key by key, bad files never stop a pass (CONFIG-5..9)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from longhaul_daemon.user_settings import (
    DEFAULT_RETRY_NOTE_CHARS,
    KNOWN_KEYS,
    Settings,
    SettingsProblem,
    load_settings,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent"
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    return agent, project


def _write(path: Path, value: object) -> None:
    path.write_text(json.dumps(value), encoding="utf-8")


def test_config5_no_files_means_defaults(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    assert load_settings(str(agent), str(project)) == Settings()


def test_config5_project_overrides_agent_key_by_key(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {"summarizer": "anthropic/claude-x", "retryNoteChars": 900})
    _write(project / ".pi" / "longhaul.json", {"retryNoteChars": 1500})
    settings = load_settings(str(agent), str(project))
    assert settings.summarizer == "anthropic/claude-x"  # kept from the agent file
    assert settings.retryNoteChars == 1500  # the project's value wins
    assert settings.problems == ()


def test_config5_reread_every_call(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {"narrativeMode": "turns"})
    assert load_settings(str(agent), str(project)).narrativeMode == "turns"
    _write(agent / "longhaul.json", {"narrativeMode": "diff"})
    assert load_settings(str(agent), str(project)).narrativeMode == "diff"


def test_config8_summarizer_spec_keeps_slashes_in_the_model_id(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {"summarizer": "openrouter/meta-llama/llama-4"})
    assert load_settings(str(agent), str(project)).summarizer == "openrouter/meta-llama/llama-4"


def test_config8_project_can_clear_the_route(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {"summarizer": "a/b"})
    _write(project / ".pi" / "longhaul.json", {"summarizer": None})
    assert load_settings(str(agent), str(project)).summarizer is None


@pytest.mark.parametrize(
    ("content", "code"),
    [("{not json", "not-json"), ("[1, 2]", "not-object"), ("\xff\xfe", "not-json")],
)
def test_config9_bad_file_falls_back_to_defaults_with_a_code(
    dirs: tuple[Path, Path], content: str, code: str
) -> None:
    agent, project = dirs
    (agent / "longhaul.json").write_bytes(content.encode("latin-1"))
    settings = load_settings(str(agent), str(project))
    assert (settings.summarizer, settings.narrativeMode, settings.retryNoteChars) == (
        None,
        "diff",
        DEFAULT_RETRY_NOTE_CHARS,
    )
    assert settings.problems == (SettingsProblem("agent", code),)


def test_config9_a_fifo_never_blocks_and_a_directory_is_not_read(dirs: tuple[Path, Path]) -> None:
    agent, project = dirs
    os.mkfifo(agent / "longhaul.json")
    (project / ".pi" / "longhaul.json").mkdir()
    settings = load_settings(str(agent), str(project))
    assert settings.problems == (
        SettingsProblem("agent", "not-regular"),
        SettingsProblem("project", "not-regular"),
    )


@pytest.mark.parametrize(
    ("values", "code"),
    [
        ({"narrativeMode": "chatty"}, "bad-narrativeMode"),
        ({"retryNoteChars": 0}, "bad-retryNoteChars"),
        ({"retryNoteChars": True}, "bad-retryNoteChars"),
        ({"retryNoteChars": "2000"}, "bad-retryNoteChars"),
        ({"summarizer": "no-slash"}, "bad-summarizer"),
        ({"summarizer": 42}, "bad-summarizer"),
    ],
)
def test_config6_7_8_invalid_values_fall_back_and_are_named(
    dirs: tuple[Path, Path], values: dict[str, object], code: str
) -> None:
    agent, project = dirs
    _write(project / ".pi" / "longhaul.json", values)
    settings = load_settings(str(agent), str(project))
    assert settings.narrativeMode == "diff"
    assert settings.retryNoteChars == DEFAULT_RETRY_NOTE_CHARS
    assert settings.summarizer is None
    assert settings.problems == (SettingsProblem("project", code),)


def test_config9_an_unknown_key_is_not_used_but_reported_with_the_key_it_resembles(
    dirs: tuple[Path, Path],
) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {"sumarizer": "a/b", "narativeMode": "turns", "retryNoteChars": 10})
    _write(project / ".pi" / "longhaul.json", {"futureKey": {"x": 1}, "x" * 65: 1, "\u202etrick": 1})
    settings = load_settings(str(agent), str(project))
    assert (settings.summarizer, settings.narrativeMode, settings.retryNoteChars) == (None, "diff", 10)
    found = [(p.source, p.code, p.key, p.guess) for p in settings.problems]
    assert found == [
        ("agent", "unknown-key", '"sumarizer"', "summarizer"),
        ("agent", "unknown-key", '"narativeMode"', "narrativeMode"),
        ("project", "unknown-key", '"futureKey"', None),
        ("project", "unknown-key", "a key of 65 characters", None),  # too long to show
        ("project", "unknown-key", "a key of 6 characters", None),  # not printable ASCII: never shown
    ]
    assert {p.path for p in settings.problems} == {
        str(agent / "longhaul.json"),
        str(project / ".pi" / "longhaul.json"),
    }


@pytest.mark.parametrize("key", KNOWN_KEYS)
def test_every_key_the_settings_read_is_known(dirs: tuple[Path, Path], key: str) -> None:
    agent, project = dirs
    _write(agent / "longhaul.json", {key: None})
    assert [p.code for p in load_settings(str(agent), str(project)).problems if p.code == "unknown-key"] == []
    assert f'`"{key}"' in (REPO / "README.md").read_text(encoding="utf-8")  # and the README's table names it


def test_the_file_may_hold_comments_and_trailing_commas_as_pis_models_json_may(
    dirs: tuple[Path, Path],
) -> None:
    agent, project = dirs
    (agent / "longhaul.json").write_text(
        '{\n  // the cheap model for summaries\n  "summarizer": "a/b",\n  "retryNoteChars": 900,\n}\n',
        encoding="utf-8",
    )
    settings = load_settings(str(agent), str(project))
    assert (settings.summarizer, settings.retryNoteChars, settings.problems) == ("a/b", 900, ())
    (agent / "longhaul.json").write_text('{"summarizer": "a/b" /* no */}', encoding="utf-8")
    assert load_settings(str(agent), str(project)).problems == (SettingsProblem("agent", "not-json"),)


@pytest.mark.parametrize("value", [{"default": 8}, None, "4", {"anthropic": 0}])
def test_concurrency_in_either_file_applies_to_nothing_and_says_so(
    dirs: tuple[Path, Path], value: object
) -> None:
    """Provider limits are shared by every session, so they are the daemon's (``serve --concurrency``): a
    project's file can no longer set them for everyone. The key is reported, whatever its value, and the
    rest of the file still applies."""
    agent, project = dirs
    _write(agent / "longhaul.json", {"concurrency": {"default": 8}})
    _write(project / ".pi" / "longhaul.json", {"concurrency": value, "retryNoteChars": 10})
    settings = load_settings(str(agent), str(project))
    assert settings.retryNoteChars == 10
    assert [(p.source, p.code) for p in settings.problems] == [
        ("agent", "daemon-wide-concurrency"),
        ("project", "daemon-wide-concurrency"),
    ]
