"""What ``serve`` sets in the interpreter so the event loop keeps answering while a big pass computes."""

from __future__ import annotations

import json
import subprocess
import sys

from longhaul_daemon.server.lifecycle import GC_THRESHOLDS, SWITCH_INTERVAL_S


def test_pass21_serving_freezes_start_up_objects_and_collects_and_switches_less_often() -> None:
    """What ``serve`` does to the interpreter so a big pass in a worker thread does not stall ``status``."""
    code = (
        "import gc, sys, json\n"
        "from longhaul_daemon.server.lifecycle import tune_for_serving\n"
        "before = gc.get_freeze_count()\n"
        "tune_for_serving()\n"
        "frozen = gc.get_freeze_count() > before\n"
        "print(json.dumps([list(gc.get_threshold()), sys.getswitchinterval(), frozen]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    thresholds, interval, frozen = json.loads(out)
    assert tuple(thresholds) == GC_THRESHOLDS and interval == SWITCH_INTERVAL_S and frozen
