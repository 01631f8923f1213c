"""PASS-22: which apis the daemon sends through pi, from ``serve --via-pi`` or ``$LONGHAUL_VIA_PI_APIS``."""

from __future__ import annotations

from pathlib import Path

import pytest

from longhaul_daemon.cli import VIA_PI_ENV, build_parser, via_pi_apis
from longhaul_daemon.errors import StartupError

from .in_process_daemon import running_daemon


def test_flags_win_over_the_environment() -> None:
    args = build_parser().parse_args(["serve", "--via-pi", "openai-completions", "--via-pi", "google-vertex"])
    env = {VIA_PI_ENV: "anthropic-messages"}
    assert via_pi_apis(args.via_pi, env) == {"openai-completions", "google-vertex"}


def test_the_environment_is_a_comma_list() -> None:
    args = build_parser().parse_args(["serve"])
    assert via_pi_apis(args.via_pi, {VIA_PI_ENV: " bedrock-converse-stream, ,openai-codex-responses "}) == {
        "bedrock-converse-stream",
        "openai-codex-responses",
    }
    assert via_pi_apis(args.via_pi, {}) == frozenset()


def test_a_bad_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(StartupError):
        via_pi_apis(None, {VIA_PI_ENV: "openai completions"})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--via-pi", "a/b"])
    assert "not a pi api name" in capsys.readouterr().err


@pytest.mark.anyio
async def test_the_daemon_hands_them_to_its_services(short_tmp: Path) -> None:
    apis = frozenset({"openai-completions"})
    async with running_daemon(short_tmp / "d.sock", via_pi_apis=apis) as handle:
        assert handle.services.via_pi_apis == apis
