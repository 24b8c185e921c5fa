"""A server without /metrics is named once per sweep, however many levels scrape it."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bankbench.sweep.server_checks import Scraper
from tests.support.threaded_http import serve_in_thread


class _NoMetrics(BaseHTTPRequestHandler):
    """Answers 404 to everything, as llama.cpp's OpenAI server does for /metrics."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_missing_metrics_is_named_once_per_sweep(tmp_path, capsys):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoMetrics)
    serve_in_thread(server)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        scrape = Scraper(url)
        got = [scrape(tmp_path / f"m{i}.prom") for i in range(4)]  # two levels, before/after
        again = Scraper(url)(tmp_path / "next-sweep.prom")
    finally:
        server.shutdown()
    assert got == [False] * 4 and again is False
    out = capsys.readouterr().out
    assert out.count("no /metrics from") == 2  # once for each sweep
    assert "HTTP 404" in out
    assert not list(tmp_path.glob("*.prom"))
