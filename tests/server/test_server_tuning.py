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


def _run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out)
    return result


def test_pass21_the_collector_is_off_while_heavy_work_runs_and_its_leftovers_are_frozen() -> None:
    """Issue 10: no collection stalls ``status`` during a big pass, and none walks what the pass left behind
    when it ends; a library's collector (no pause enabled) and one turned off elsewhere are left alone."""
    out = _run(
        "import gc, json\n"
        "from longhaul_daemon.collector import CollectorPause\n"
        "pause, out = CollectorPause(), {}\n"
        "with pause.held():\n"
        "    out['library'] = gc.isenabled()\n"
        "pause.enabled = True\n"
        "frozen = gc.get_freeze_count()\n"
        "with pause.held():\n"
        "    with pause.held():\n"
        "        out['nested'] = gc.isenabled()\n"
        "    out['outer'] = gc.isenabled()\n"
        "    kept = [[n] for n in range(1000)]\n"
        "out['after'] = gc.isenabled()\n"
        "out['froze'] = gc.get_freeze_count() >= frozen + 1000\n"
        "gc.disable()\n"
        "with pause.held():\n"
        "    pass\n"
        "out['left_off'] = not gc.isenabled()\n"
        "print(json.dumps(out))\n"
    )
    assert out == {
        "library": True,
        "nested": False,
        "outer": False,
        "after": True,
        "froze": True,
        "left_off": True,
    }


def test_pass21_a_full_collection_frees_cycles_among_frozen_objects_and_freezes_the_rest_again() -> None:
    out = _run(
        "import gc, json\n"
        "from longhaul_daemon.collector import collect_all\n"
        "class Node:\n"
        "    pass\n"
        "a, b = Node(), Node()\n"
        "a.other, b.other = b, a\n"
        "gc.freeze()\n"
        "del a, b\n"
        "freed = gc.collect()\n"
        "freed_all = collect_all()\n"
        "print(json.dumps({'plain': freed, 'all': freed_all, 'frozen': gc.get_freeze_count() > 0}))\n"
    )
    assert out["plain"] == 0  # a collection alone never looks at frozen objects
    assert isinstance(out["all"], int) and out["all"] >= 2
    assert out["frozen"] is True
