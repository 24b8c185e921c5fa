"""The bank as a service: `bank` commands arrive on a Unix socket and only this process writes
the intents log.

entrypoint.sh starts it as root when the environment starts (Docker runs the image's
ENTRYPOINT; LocalEnvironment runs it too), after making the log a root-owned file in a sticky
folder. An agent running as another user can then call the bank but cannot write, replace or
delete its record, and cannot stand in for the service: the socket's folder is root's.

    python3 bankd.py [--socket PATH]      (default $BANK_SOCKET, else /run/bank/bank.sock)

One request per connection: a JSON line {"argv": [...], "stdin": text|null, "attempt":
text|null, "customer_env": {name: text}|absent}; one JSON line back {"code": int, "out": text,
"err": text}. `customer_env` (only the CUSTOMER_ENV names `bank say` forwards: the llm
customer's endpoint and key among them) is passed to the command and never written anywhere,
and is taken only from a caller running as root (the kernel says who, SO_PEERCRED): the
harness's own `bank say`. Any other caller's is refused, so an agent cannot point the
customer, who knows the persona and every goal, at a listener of its own.
Standard library only; runs on Python 3.8+.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import sys
import threading

from mockbank import CUSTOMER_ENV, run

DEFAULT_SOCKET = "/run/bank/bank.sock"
MAX_REQUEST_BYTES = 1024 * 1024  # stdin arguments included; the log keeps at most 16 kB of them
MAX_CONNECTIONS = 32  # more at once are turned away, so a flood cannot exhaust threads
REQUEST_TIMEOUT_SEC = 10
EXIT_UNAVAILABLE = 69

_calls = threading.Lock()  # one command at a time: the log's seq order is the call order
_slots = threading.BoundedSemaphore(MAX_CONNECTIONS)


def socket_path() -> str:
    return os.environ.get("BANK_SOCKET") or DEFAULT_SOCKET


def parse_request(raw: bytes) -> tuple[list[str], str, str | None, dict[str, str]]:
    """(argv, stdin text, $BANK_ATTEMPT, customer settings) from one request line, or
    ValueError."""
    request = json.loads(raw.decode("utf-8", "surrogatepass"))
    if not isinstance(request, dict):
        raise ValueError("request must be a JSON object")
    argv, stdin, attempt = request.get("argv"), request.get("stdin"), request.get("attempt")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a list of strings")
    if stdin is not None and not isinstance(stdin, str):
        raise ValueError("stdin must be text")
    if attempt is not None and not isinstance(attempt, str):
        raise ValueError("attempt must be text")
    customer_env = request.get("customer_env") or {}
    if not isinstance(customer_env, dict) or not all(
            k in CUSTOMER_ENV and isinstance(v, str) for k, v in customer_env.items()):
        raise ValueError(f"customer_env must map names of {', '.join(CUSTOMER_ENV)} to text")
    return argv, stdin or "", attempt, customer_env


def peer_uid(connection: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, as the kernel knows it."""
    try:
        raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                    struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return struct.unpack("3i", raw)[1]


def answer(raw: bytes, caller_uid: int | None = 0) -> dict[str, object]:
    try:
        argv, stdin, attempt, customer_env = parse_request(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return {"code": 64, "out": "", "err": f"bank: bad request to the bank service: {exc}\n"}
    if customer_env and caller_uid != 0:
        return {"code": 64, "out": "", "err": (
            "bank: customer settings (" + ", ".join(sorted(customer_env)) + ") come from the "
            "harness alone; this caller's were refused and nothing was recorded\n")}
    with _calls:
        reply = run(argv, lambda: stdin, attempt, customer_env)
    return {"code": reply.code, "out": reply.out.decode("utf-8", "replace"),
            "err": reply.err.decode("utf-8", "replace")}


class Handler(socketserver.StreamRequestHandler):
    timeout = REQUEST_TIMEOUT_SEC

    def handle(self) -> None:
        if not _slots.acquire(blocking=False):
            self.wfile.write(b'{"code": 69, "out": "", "err": "bank: service busy\\n"}\n')
            return
        try:
            raw = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            if len(raw) > MAX_REQUEST_BYTES:
                reply: dict[str, object] = {
                    "code": 64, "out": "",
                    "err": f"bank: request larger than {MAX_REQUEST_BYTES} bytes\n"}
            else:
                reply = answer(raw, peer_uid(self.request))
            self.wfile.write(json.dumps(reply).encode("utf-8") + b"\n")
        except OSError:
            pass  # the caller went away or timed out; nothing was recorded for it
        finally:
            _slots.release()


class Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def serve(path: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    server = Server(path, Handler)
    os.chmod(path, 0o666)  # any user may call the bank; only root owns the folder
    server.serve_forever()


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) == 2 and argv[0] == "--socket" else socket_path()
    if argv and not (len(argv) == 2 and argv[0] == "--socket"):
        sys.stderr.write("usage: bankd.py [--socket PATH]\n")
        return 64
    try:
        serve(path)
    except OSError as exc:
        sys.stderr.write(f"bankd: cannot serve on {path}: {exc}\n")
        return EXIT_UNAVAILABLE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
