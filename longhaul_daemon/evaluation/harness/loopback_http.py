"""An HTTP server on a free loopback port in a thread of its own, for the harness's stand-ins and proxies.

The scripted model server and ``score``'s recording proxy both serve from here, so both bind only
127.0.0.1, never block the caller, and stop the same way: the serving loop shut down, the socket closed, the
thread joined.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["LoopbackHttp"]

_JOIN_S = 5.0  # a handler still writing when the server stops is a daemon thread: it is not waited for longer


class LoopbackHttp:
    """``handler`` served on ``127.0.0.1:<free port>`` once :meth:`start` ran, until :meth:`close`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, name: str) -> None:
        self._handler = handler
        self._name = name
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port; only after :meth:`start`."""
        if self._httpd is None:
            raise RuntimeError(f"{self._name} not started")
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        """Serve on a free 127.0.0.1 port from a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=self._name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and free the port; safe to call twice, or before :meth:`start`."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=_JOIN_S)
            self._thread = None
