"""The daemon's transport: a private Unix socket, NDJSON connections, and the process lifecycle around it."""

from longhaul_daemon.server.connection import ConnectionLimits, RequestTracker, serve_connection
from longhaul_daemon.server.lifecycle import DaemonHandle, ServeOptions, configure_operational_log, run_daemon
from longhaul_daemon.server.listener import OpenedListener, open_listener
from longhaul_daemon.server.paths import (
    SOCKET_ENV,
    default_socket_path,
    ensure_private_dir,
    resolve_socket_path,
)

__all__ = [
    "SOCKET_ENV",
    "ConnectionLimits",
    "DaemonHandle",
    "OpenedListener",
    "RequestTracker",
    "ServeOptions",
    "configure_operational_log",
    "default_socket_path",
    "ensure_private_dir",
    "open_listener",
    "resolve_socket_path",
    "run_daemon",
    "serve_connection",
]
