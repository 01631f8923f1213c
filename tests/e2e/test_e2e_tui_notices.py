"""Longhaul's notices on pi's interactive screen, read once the compaction ended (FAIL-10, CONFIG-8/9).

pi 0.73.1 clears and redraws its chat when a compaction ends, so a notice sent from inside the compaction
hook was drawn and wiped a moment later: RPC mode saw it, a person never did. Here real pi runs in tmux with
the shim, ``/compact`` is typed, and the screen is read once pi has drawn the compacted chat: the notice must
be there, below the compaction block. Five kinds of notice: a fallback (no daemon), a narrative-less close,
a partial close, a settings problem (``longhaul.json`` that is not JSON) and a refused summarizer (a model pi
has no key for).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import answer, raw
from .diff_steps import install
from .session_log import compactions, is_longhaul, read_entries
from .tui import PiScreen, compact_by_hand, notice_after_compaction

pytestmark = [pytest.mark.e2e, pytest.mark.tui]

KEYLESS = "anthropic/claude-sonnet-4-5"  # a model pi ships; the sandbox has no Anthropic key


def only_compaction(sandbox: Sandbox) -> dict[str, object]:
    [session] = sandbox.session_files()
    [entry] = compactions(read_entries(session))
    return entry


def test_a_fallback_notice_stays_on_screen_after_pi_compacted(
    sandbox: Sandbox, start_screen: Callable[[], PiScreen]
) -> None:
    """FAIL-1, FAIL-15: no daemon; pi's own compaction runs and the notice saying why is readable after it."""
    screen = start_screen()
    compact_by_hand(screen, "Please look at the export module.")
    notice_after_compaction(
        screen,
        f"Longhaul: daemon not running (connect ENOENT {sandbox.socket_path}); "
        "pi's own compaction runs instead",
    )
    assert not is_longhaul(only_compaction(sandbox)), "pi's own summary, since no daemon answered"


def test_a_narrative_less_close_is_shown_after_longhauls_compaction(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_screen: Callable[[], PiScreen]
) -> None:
    """FAIL-10: the Diff answers prose, so the span closes without a narrative; the notice says why."""
    install(model_server, raw("I labeled the messages: the formatter one is a rule."))
    screen = start_screen()
    compact_by_hand(screen, "Always run the formatter before you push.")
    notice_after_compaction(
        screen,
        "Longhaul closed span 1 without a narrative (unparsable-answer): ledger and World updated, "
        "1 user message carried to the next pass.",
    )
    assert is_longhaul(only_compaction(sandbox))


def test_a_partial_close_is_shown_after_longhauls_compaction(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_screen: Callable[[], PiScreen]
) -> None:
    """FAIL-1, FAIL-4 (ours): the answer labels nothing and neither does the label call, so the answer counts,
    the span closes partial, and the notice says the unlabeled message is carried with its words."""
    script = install(model_server, then=answer(default=None))
    screen = start_screen()
    compact_by_hand(screen, "Always run the formatter before you push.")
    notice_after_compaction(
        screen,
        "Longhaul closed span 1, but the model gave no usable label to 1 user message: carried, with their "
        "words, to the next pass.",
    )
    assert script.kinds()[:2] == ["first", "label"]
    assert is_longhaul(only_compaction(sandbox))


def test_a_broken_longhaul_json_is_shown_after_the_compaction(
    sandbox: Sandbox, daemon: Daemon, start_screen: Callable[[], PiScreen]
) -> None:
    """CONFIG-9: the project's longhaul.json is not JSON; the defaults apply and the notice names the file."""
    project_file = sandbox.project / ".pi" / "longhaul.json"
    project_file.parent.mkdir()
    project_file.write_text("{not json")
    screen = start_screen()
    compact_by_hand(screen, "Please look at the export module.")
    notice_after_compaction(
        screen, f"Longhaul: {project_file} is not valid JSON; Longhaul's defaults apply until it is fixed."
    )
    assert is_longhaul(only_compaction(sandbox))


def test_a_refused_summarizer_is_shown_after_the_compaction(
    sandbox: Sandbox, daemon: Daemon, start_screen: Callable[[], PiScreen]
) -> None:
    """CONFIG-8, FAIL-9: longhaul.json names a model pi has no key for; the session's model writes the summary
    and the notice says so."""
    sandbox.extra_pi_env.update(ANTHROPIC_API_KEY="", ANTHROPIC_OAUTH_TOKEN="")
    agent_file = sandbox.agent_dir / "longhaul.json"
    agent_file.write_text(json.dumps({"summarizer": KEYLESS}))
    screen = start_screen()
    compact_by_hand(screen, "Please look at the import module.")
    notice_after_compaction(
        screen,
        f'Longhaul: the summarizer {KEYLESS} ("summarizer" in {agent_file}) was not used: '
        "pi has no credentials for it (log in, or set its API key); "
        "the session's model fake/fake-model wrote this summary.",
    )
    assert is_longhaul(only_compaction(sandbox))
