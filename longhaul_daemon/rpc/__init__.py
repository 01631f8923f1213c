"""JSON-RPC 2.0 layer: typed method registry, the method table, and the jsonrpcserver-backed dispatcher."""

from longhaul_daemon.rpc.dispatch import Dispatcher, encode_message, error_response
from longhaul_daemon.rpc.methods import RunPass, Services, build_methods, new_pass_id
from longhaul_daemon.rpc.registry import RpcFailure, RpcMethod, RpcOutcome, RpcSuccess, rpc

__all__ = [
    "Dispatcher",
    "RpcFailure",
    "RpcMethod",
    "RpcOutcome",
    "RpcSuccess",
    "RunPass",
    "Services",
    "build_methods",
    "encode_message",
    "error_response",
    "new_pass_id",
    "rpc",
]
