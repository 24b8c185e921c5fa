"""An in-process HTTP server for a test, served from a daemon thread."""

from __future__ import annotations

import threading
from socketserver import BaseServer

# serve_forever looks for a shutdown() this often; at its default (0.5 s) every shutdown waited
# up to half a second, a whole test's worth for most of the tests that start one.
POLL_S = 0.05


def serve_in_thread(server: BaseServer) -> BaseServer:
    """Start serving `server` in a daemon thread; `server.shutdown()` stops it within POLL_S."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S},
                     daemon=True).start()
    return server
