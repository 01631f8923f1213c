"""pi's interactive screen, driven as a person would: pi in tmux, keys typed with ``send-keys``, the screen
read with ``capture-pane``.

RPC mode reports a notice as a UI request whatever happens to it afterwards; only the real screen shows
whether the user can still read it once pi has redrawn its chat. Each :class:`PiScreen` runs its own tmux
server on a socket inside the sandbox (``-S``, no config file), so it never meets the user's tmux, and the
server inherits the sandbox's pi environment. Every wait polls the screen against a bounded deadline;
nothing sleeps in place of a check.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .scenario import LONG_WRAP_UP

__all__ = ["PiScreen", "ScreenError", "compact_by_hand", "flat", "notice_after_compaction", "tmux_missing"]

WIDTH = 160
HEIGHT = 50
POLL_S = 0.1
DEFAULT_TIMEOUT_S = 60.0
SESSION = "pi"
READY = "fake-model"  # the sandbox model's name in pi's footer: the editor is up
COMPACTED = "Compacted from"  # pi's compaction block, drawn when the compaction has ended
COMPACTING = "Compacting context"  # pi's loader while it runs


class ScreenError(AssertionError):
    """The screen did not show what was waited for."""


def tmux_missing() -> str | None:
    """Why the TUI tests cannot run here (``.ci/run`` installs tmux), or None."""
    return None if shutil.which("tmux") else "tmux is not on PATH (.ci/run installs it with apt)"


def flat(text: str) -> str:
    """``text`` with every run of whitespace, line breaks included, made one space: pi wraps long lines."""
    return " ".join(text.split())


class PiScreen:
    """``pi -e <shim>`` (interactive) in a private tmux server, ``WIDTH`` x ``HEIGHT`` cells."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        pi_bin: Path | None = None,
        shim_dir: Path | None = None,
        env: dict[str, str] | None = None,
        argv: Sequence[str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        """``argv`` replaces the whole command (default: the sandbox's pi with ``-e`` and its shim), run in
        ``cwd`` (default: the sandbox's project)."""
        self.sandbox = sandbox
        self.socket = sandbox.root / "tmux.sock"
        command = list(argv) if argv is not None else [
            str(pi_bin or sandbox.pi_bin), "-e", str(shim_dir or sandbox.shim_dir),
        ]  # fmt: skip
        run_env = dict(env if env is not None else sandbox.pi_env())
        run_env["TERM"] = "xterm-256color"
        run_env.pop("TMUX", None)
        self._tmux(
            "new-session", "-d", "-s", SESSION, "-x", str(WIDTH), "-y", str(HEIGHT),
            "-c", str(cwd or sandbox.project), *command,
            env=run_env,
        )  # fmt: skip
        # Keep the pane after pi exits, so a test can still read what pi printed last.
        self._tmux("set-option", "-t", SESSION, "remain-on-exit", "on")

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise ScreenError(f"tmux {args[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        """What the terminal shows now, one line per row, trailing blanks dropped."""
        return self._tmux("capture-pane", "-p", "-t", SESSION)

    def history(self) -> str:
        """The screen with every row scrolled off above it (tmux's scrollback, ``capture-pane -S -``): what a
        person reads by scrolling up."""
        return self._tmux("capture-pane", "-p", "-S", "-", "-t", SESSION)

    def type(self, text: str) -> None:
        """Type ``text`` literally, then Enter."""
        self._tmux("send-keys", "-t", SESSION, "-l", text)
        self._tmux("send-keys", "-t", SESSION, "Enter")

    def paste(self, text: str) -> None:
        """Paste ``text`` as a terminal does (bracketed paste, line breaks kept in the editor), then Enter."""
        self._tmux("set-buffer", "-b", "longhaul-paste", "--", text)
        self._tmux("paste-buffer", "-p", "-d", "-b", "longhaul-paste", "-t", SESSION)
        self._tmux("send-keys", "-t", SESSION, "Enter")

    def press(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", SESSION, *keys)

    def wait_until(
        self,
        check: Callable[[str], bool],
        what: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        scrollback: bool = False,
    ) -> str:
        """Poll the screen (with ``scrollback``, :meth:`history`) until ``check`` holds on it; return what it
        showed then, or fail showing the last one."""
        read = self.history if scrollback else self.screen
        deadline = time.monotonic() + timeout
        shown = read()
        while not check(shown):
            if time.monotonic() > deadline:
                raise ScreenError(f"the screen never showed {what} within {timeout} s; it shows:\n{shown}")
            time.sleep(POLL_S)
            shown = read()
        return shown

    def wait_for_text(self, text: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> str:
        """Wait until ``text`` is on the screen (compared with whitespace made single spaces)."""
        return self.wait_until(lambda shown: flat(text) in flat(shown), repr(text), timeout=timeout)

    def pane_dead(self) -> bool:
        """Whether the program in the pane has exited."""
        return self._tmux("display-message", "-p", "-t", SESSION, "#{pane_dead}").strip() == "1"

    def close(self) -> None:
        """Stop the tmux server; pi gets SIGHUP and exits."""
        with contextlib.suppress(ScreenError, subprocess.TimeoutExpired):
            self._tmux("kill-server")

    def __enter__(self) -> PiScreen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def compact_by_hand(screen: PiScreen, first: str) -> str:
    """Two turns (``first``, then a long one pi keeps), then ``/compact``; the screen once pi has drawn the
    compacted chat."""
    screen.wait_for_text(READY)
    for message in (first, LONG_WRAP_UP):
        screen.type(message)
        screen.wait_for_text("ACK: " + message[:60])  # the scripted model's answer (model_server.py)
    screen.type("/compact")
    return screen.wait_until(
        lambda shown: COMPACTED in shown and COMPACTING not in shown, "the end of the compaction"
    )


def notice_after_compaction(screen: PiScreen, notice: str) -> str:
    """Wait for ``notice``; it must stand below pi's compaction block, so it was drawn after the redraw."""
    shown = screen.wait_for_text(notice)
    text = flat(shown)
    below = text.rfind(flat(COMPACTED)) < text.find(flat(notice))
    assert below, f"the notice stands above the compaction block:\n{shown}"
    return shown
