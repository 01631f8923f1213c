"""A watched ``model.complete`` on a real socket: the shim's ``model.delta`` notes reach the waiting call, the
daemon's ``model.stop`` names it, and notes for no waiting call (or from a client that was never asked)
are dropped without a reply, since a notification is never answered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from longhaul_daemon.models.via_pi import MODEL_DELTA, MODEL_STOP, PiPeer
from longhaul_daemon.protocol import CompactParams, CompactResult

from .in_process_daemon import compact_params, connect, running_daemon
from .test_peer import result_with

ASK = {"model": {"provider": "p", "id": "m"}, "messages": [{"role": "user", "text": "hi"}], "watch": True}


async def watching_pass(
    params: CompactParams, *, pass_id: str, peer: PiPeer | None, **_: object
) -> CompactResult:
    """Asks the shim once, collecting its notes, and asks it to stop once a note says ``END``."""
    assert peer is not None
    notes: list[str] = []
    stop = anyio.Event()

    def on_note(note: Any) -> None:
        notes.append(str(note.get("text")))
        if "END" in notes[-1]:
            stop.set()

    answer = await peer.request("model.complete", ASK, on_note=on_note, stop=stop)
    return result_with(pass_id, json.dumps({"notes": notes, "answer": answer}))


def note(call_id: object, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": MODEL_DELTA, "params": {"id": call_id, "text": text}}


@pytest.mark.anyio
async def test_notes_reach_the_waiting_call_and_the_daemon_asks_that_call_to_stop(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=watching_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        compact_id = await connection.request("compact", compact_params())
        asked = await connection.receive()
        assert asked["method"] == "model.complete" and asked["params"]["watch"] is True
        await connection.send(note("d999", "for no call"))  # dropped
        await connection.send({"jsonrpc": "2.0", "method": "model.other", "params": {"id": asked["id"]}})
        await connection.send(note(asked["id"], '{"a": 1}'))
        await connection.send(note(asked["id"], " END"))
        stop = await connection.receive()
        assert stop == {"jsonrpc": "2.0", "method": MODEL_STOP, "params": {"id": asked["id"]}}
        await connection.send(note(asked["id"], "late, after the stop"))
        await connection.send(
            {"jsonrpc": "2.0", "id": asked["id"], "result": {"text": "T", "stoppedEarly": True}}
        )
        reply = await connection.receive()
        assert reply["id"] == compact_id, reply
        summary = json.loads(reply["result"]["compaction"]["summary"])
        assert summary["notes"][:2] == ['{"a": 1}', " END"]
        assert summary["answer"] == {"text": "T", "stoppedEarly": True}
        # model.other went to the dispatcher as a notification of an unknown method: nothing came back for it,
        # and nothing else arrived before the compact reply.
