"""Runs a command under strace and reads back what each process it started ran and where it tried to connect.

strace follows every child (threads included) and writes one file per process; ``-xx`` prints every string
as hex escapes, so argv, the environment and socket paths decode exactly whatever bytes they hold. Only the
calls that show where a process reaches are traced: ``execve`` (argv and environment), ``bind``,
``getsockname`` (the port a bind to port 0 got), ``connect``, ``sendto`` and ``sendmsg`` (their addresses).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Exec", "Reach", "Trace", "missing_strace", "run_traced"]

_TRACED = "execve,bind,getsockname,connect,sendto,sendmsg"
_STRING = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_ARRAY = re.compile(r"\[([^\]]*)\]")
_FAMILY = re.compile(r"sa_family=(AF_[A-Z0-9]+)")
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
_IPV4 = re.compile(r"sin_addr=inet_addr\(" + _STRING.pattern + r"\)")
_IPV6 = re.compile(r"inet_pton\(AF_INET6, " + _STRING.pattern)
_UNIX = re.compile(r"sun_path=@?" + _STRING.pattern)
_CALL = re.compile(r"^(execve|bind|getsockname|connect|sendto|sendmsg)\((.*)\) += (-?\d+)")


def _decode(hexed: str) -> str:
    return bytes.fromhex(hexed.replace("\\x", "")).decode("utf-8", "replace")


@dataclass(frozen=True)
class Exec:
    """A successful ``execve``: the program, its argv and its whole environment."""

    pid: int
    path: str
    argv: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class Reach:
    """A socket address a process bound, was given by the kernel, connected or sent to."""

    pid: int
    call: str
    family: str
    host: str | None
    port: int | None
    path: str | None

    @property
    def loopback(self) -> bool:
        if self.host is None:
            return False
        address = ipaddress.ip_address(self.host)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_loopback

    @property
    def inet(self) -> bool:
        return self.family in ("AF_INET", "AF_INET6")


@dataclass(frozen=True)
class Trace:
    returncode: int
    stdout: str
    stderr: str
    execs: tuple[Exec, ...]
    reaches: tuple[Reach, ...]
    left_running: tuple[tuple[str, ...], ...] = ()  # programs killed when the run did not end in time


def missing_strace() -> str | None:
    return None if shutil.which("strace") else "strace is not installed (apt-get install strace)"


def _exec(pid: int, args: str) -> Exec | None:
    path = _STRING.match(args)
    arrays = _ARRAY.findall(args)
    if path is None or len(arrays) < 2:
        return None
    argv = tuple(_decode(s) for s in _STRING.findall(arrays[0]))
    pairs = (_decode(s).partition("=") for s in _STRING.findall(arrays[1]))
    return Exec(pid=pid, path=_decode(path.group(1)), argv=argv, env={k: v for k, _, v in pairs})


def _reach(pid: int, call: str, args: str) -> Reach | None:
    family = _FAMILY.search(args)
    if family is None:
        return None  # a send on a connected socket: its address was the connect's
    port, host, path = _PORT.search(args), _IPV4.search(args) or _IPV6.search(args), _UNIX.search(args)
    return Reach(
        pid=pid,
        call=call,
        family=family.group(1),
        host=_decode(host.group(1)) if host else None,
        port=int(port.group(1)) if port else None,
        path=_decode(path.group(1)) if path else None,
    )


def _read(directory: Path) -> tuple[list[Exec], list[Reach]]:
    execs: list[Exec] = []
    reaches: list[Reach] = []
    for file in sorted(directory.glob("t.*"), key=lambda p: int(p.suffix[1:])):
        pid = int(file.suffix[1:])
        for line in file.read_text(encoding="ascii", errors="replace").splitlines():
            match = _CALL.match(line)
            if match is None:
                continue
            call, args, result = match.groups()
            if call == "execve":
                found = _exec(pid, args)
                if found is not None and result == "0":
                    execs.append(found)
            else:
                reach = _reach(pid, call, args)
                if reach is not None:
                    reaches.append(reach)
    return execs, reaches


def _alive(program: Exec) -> bool:
    """``program`` still runs (its pid holds the same command line, so a reused pid does not count)."""
    try:
        cmdline = Path(f"/proc/{program.pid}/cmdline").read_bytes()
    except OSError:
        return False
    return cmdline.split(b"\0")[: len(program.argv)] == [a.encode() for a in program.argv]


def run_traced(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, out_dir: Path, timeout: float
) -> Trace:
    """``argv`` under ``strace -f``; its trace files go to ``out_dir``.

    strace returns only once every process it traces has exited, so a run that returns left nothing behind.
    One that does not within ``timeout`` has its traced programs killed, and ``left_running`` names them.
    """
    out_dir.mkdir()
    strace = [
        "strace",
        "-ff",
        "-qq",
        "--seccomp-bpf",
        "-e",
        "signal=none",
        "-e",
        f"trace={_TRACED}",
        "-v",
        "-xx",
        "-s",
        "16384",
        "-o",
        str(out_dir / "t"),
    ]
    with subprocess.Popen(
        [*strace, *argv],
        env=dict(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
            left: list[Exec] = []
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            left = [e for e in _read(out_dir)[0] if _alive(e)]
            for program in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(program.pid, signal.SIGKILL)
    execs, reaches = _read(out_dir)
    running = tuple(e.argv for e in left)
    return Trace(proc.returncode, stdout, stderr, tuple(execs), tuple(reaches), running)
