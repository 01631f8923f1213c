"""The daemon's transport: a private Unix socket, NDJSON connections, and the process lifecycle around it.

Nothing is re-exported here: importing ``longhaul_daemon.server.paths`` (as ``status`` does) must not load the
connection and RPC layers, so callers import from the submodules.
"""
