"""Provider limits are the daemon's: ``serve --concurrency KEY=N`` or ``$LONGHAUL_CONCURRENCY``."""

from __future__ import annotations

import pytest

from longhaul_daemon.cli import CONCURRENCY_ENV, build_parser, concurrency_limits
from longhaul_daemon.errors import StartupError
from longhaul_daemon.models.limits import ProviderLimits


def test_flags_win_over_the_environment_and_a_later_entry_for_a_key_wins() -> None:
    args = build_parser().parse_args(
        ["serve", "--concurrency", "default=8", "--concurrency", "anthropic=2", "--concurrency", "default=6"]
    )
    env = {CONCURRENCY_ENV: "default=1"}
    assert concurrency_limits(args.concurrency, env) == {"default": 6, "anthropic": 2}


def test_the_environment_is_a_comma_list_and_keys_may_hold_a_base_url() -> None:
    env = {CONCURRENCY_ENV: " default=3, ,ollama@http://localhost:11434/v1=1 "}
    limits = concurrency_limits(None, env)
    assert limits == {"default": 3, "ollama@http://localhost:11434/v1": 1}
    provider = ProviderLimits(per_provider=limits)
    assert provider.limit_for("ollama@http://localhost:11434/v1", "ollama") == 1
    assert provider.limit_for("openai@https://api.openai.com/v1", "openai") == 3
    assert concurrency_limits(None, {}) == {}


@pytest.mark.parametrize("entry", ["default", "default=0", "default=257", "default=two", "=3", "a b=2"])
def test_a_bad_entry_stops_the_daemon_before_it_serves(
    entry: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StartupError):
        concurrency_limits(None, {CONCURRENCY_ENV: entry})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--concurrency", entry])
    assert "--concurrency" in capsys.readouterr().err
