"""The pi releases Longhaul supports, tried at both ends, and the release just below them.

Longhaul supports pi 0.69.0 to 0.73.1 (``client_shim/lib/support.ts``): 0.69.0 is the first pi that
gives extensions TypeBox 1.x as ``typebox``. ``make install`` puts 0.69.0 and 0.68.1 under ``<venv>/pi/``,
next to the pinned 0.73.1 in ``client_shim/node_modules``. The shim is loaded as ``longhaul-daemon install``
lays it out, a copy with no ``node_modules`` beside it, so pi's own module aliases are all it can import:
from the checkout, the shim would find the pinned pi's packages and hide what an older pi lacks.

On the supported ends the shim must do what it does everywhere: offer its tools to the model, compact through
the daemon, and show a compaction's notice on the interactive screen after pi's redraw. On 0.68.1 it must
stand down with one notice, and pi must start, answer and compact on its own.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.ops.shim import shim_files

from .diff_script import notices
from .e2e_sandbox import PI_BIN_RELATIVE, REPO_ROOT, SHIM_DIR
from .scenario import expect_longhaul, wrap_up
from .session_log import compactions, is_longhaul, read_entries
from .tui import READY, PiScreen, compact_by_hand, notice_after_compaction

pytestmark = [pytest.mark.e2e, pytest.mark.tui]

PINNED = "0.73.1"  # the Makefile's PI_VERSION
OLDEST = "0.69.0"  # the Makefile's PI_OLDEST and support.ts's OLDEST_PI
TOO_OLD = "0.68.1"  # the Makefile's PI_TOO_OLD
OTHER_PIS = Path(sys.prefix) / "pi"  # where `make install` puts them, in the venv running the tests
REFUSAL = (
    f"Longhaul: pi {TOO_OLD} is older than {OLDEST}, the oldest pi Longhaul works with; pi's own compaction "
    f"runs instead (update pi (npm install -g @mariozechner/pi-coding-agent@{PINNED}) to use Longhaul)."
)


def pi_of(version: str) -> Path:
    """The ``pi`` of that release; a missing one fails (``make install`` installs them, CI runs it)."""
    path = REPO_ROOT / PI_BIN_RELATIVE if version == PINNED else OTHER_PIS / version / "node_modules/.bin/pi"
    if not path.exists():
        pytest.fail(f"pi {version} is not installed at {path}: run `make install`", pytrace=False)
    return path


def use_installed_copy(sandbox: Sandbox, version: str) -> None:
    """Run pi ``version`` with a copy of the shim laid out as ``longhaul-daemon install`` writes it."""
    copy = sandbox.root / "shim"
    for name in shim_files(SHIM_DIR):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHIM_DIR / name, copy / name)
    sandbox.shim_dir = copy
    sandbox.pi_bin = pi_of(version)


def log_records(sandbox: Sandbox, event: str) -> list[dict[str, object]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r.get("event") == event]


@pytest.mark.parametrize("version", [OLDEST, PINNED])
def test_the_shim_serves_both_ends_of_the_supported_range(
    version: str,
    sandbox: Sandbox,
    daemon: Daemon,
    model_server: ModelServer,
    start_screen: Callable[[], PiScreen],
) -> None:
    """LOG-16, TOOLS-1, PASS-9, CONFIG-9: tools offered, a Longhaul compaction with its span record and line,
    the settings notice readable after the redraw, and the record log naming a verified pi version."""
    use_installed_copy(sandbox, version)
    project_file = sandbox.project / ".pi" / "longhaul.json"
    project_file.parent.mkdir()
    project_file.write_text("{not json")
    screen = start_screen()
    compact_by_hand(screen, "Please look at the export module.")
    notice_after_compaction(
        screen, f"Longhaul: {project_file} is not valid JSON; Longhaul's defaults apply until it is fixed."
    )

    [session] = sandbox.session_files()
    expect_longhaul(session, 1, span=1)
    offered = {
        str(tool.get("function", {}).get("name"))
        for request in model_server.requests("agent")
        for tool in request.body.get("tools") or []
    }
    assert {"longhaul_remember", "longhaul_recall"} <= offered, offered
    [loaded] = log_records(sandbox, "extension-loaded")
    assert (loaded["piVersion"], loaded["piVersionVerified"]) == (version, True)


def test_an_older_pi_gets_one_notice_and_its_own_compaction(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """pi 0.68.1 cannot load the shim's tools; instead of stopping pi (a load-time error) the shim stands
    down: one notice for the whole run, no tool offered, pi's own compaction although the daemon is up."""
    use_installed_copy(sandbox, TOO_OLD)
    pi = start_pi()
    pi.prompt("Please look at the export module.")
    wrap_up(pi, "first")
    assert pi.compact().get("success") is True, pi.diagnostics()
    [entry] = compactions(read_entries(pi.session_file()))
    assert not is_longhaul(entry), "pi's own compaction"
    assert notices(pi) == [REFUSAL]
    assert pi.extension_errors() == []
    offered = {
        str(tool.get("function", {}).get("name"))
        for request in model_server.requests("agent")
        for tool in request.body.get("tools") or []
    }
    assert not offered & {"longhaul_remember", "longhaul_recall"}, offered
    assert log_records(sandbox, "extension-loaded") == [], "no hello from a shim that stood down"


def test_an_older_pi_shows_the_refusal_on_its_screen(
    sandbox: Sandbox, start_screen: Callable[[], PiScreen]
) -> None:
    """The one notice is readable where an interactive user looks, as pi starts."""
    use_installed_copy(sandbox, TOO_OLD)
    screen = start_screen()
    screen.wait_for_text(READY)
    screen.wait_for_text(REFUSAL)
