"""The build step pyproject.toml cannot say: the wheel carries pi's extension (client_shim/) in the package.

``longhaul-daemon install`` copies those files to a stable place and runs ``pi install`` on it
(``longhaul_daemon/ops/shim.py``), so a pipx, uv or pip install has the shim without a checkout. The files go
to ``longhaul_daemon/pi_shim/`` in the build directory; an editable install reads ``client_shim/`` itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIM = Path(__file__).resolve().parent / "client_shim"


def shim_files() -> list[Path]:
    """What pi needs of the shim: package.json (naming index.ts), index.ts and lib/*.ts; no tests."""
    return [SHIM / "package.json", SHIM / "index.ts", *sorted((SHIM / "lib").glob("*.ts"))]


class BuildWithShim(build_py):
    """``build_py`` that also copies the shim into ``longhaul_daemon/pi_shim/`` of the wheel."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # the checkout's client_shim/ is used as it is
        target = Path(self.build_lib) / "longhaul_daemon" / "pi_shim"
        for source in shim_files():
            if not source.is_file():
                raise FileNotFoundError(f"the wheel needs {source}, which is missing")
            destination = target / source.relative_to(SHIM)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)


setup(cmdclass={"build_py": BuildWithShim})
