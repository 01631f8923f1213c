"""A method's outcome as the client reads it: a result encoded off the loop (``compact``'s) decoded again."""

from __future__ import annotations

from longhaul_daemon import jsoncodec
from longhaul_daemon.rpc.registry import RpcFailure, RpcOutcome, RpcSuccess

__all__ = ["decoded"]


def decoded(outcome: RpcOutcome) -> RpcSuccess | RpcFailure:
    """``outcome`` with an :class:`~longhaul_daemon.jsoncodec.Encoded` result read back as JSON values."""
    if isinstance(outcome, RpcSuccess) and isinstance(outcome.result, jsoncodec.Encoded):
        return RpcSuccess(jsoncodec.loads(outcome.result.data))
    return outcome
