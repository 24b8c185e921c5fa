"""Run llama.cpp's own OpenAI-compatible HTTP server from the xllamacpp wheel until SIGTERM.

A script (the wheel has no command line): `xllamacpp.Server` starts llama.cpp's C++ server,
HTTP listener included, inside this process. Runs in any venv that has xllamacpp; imports
nothing of bankbench.

  python xllamacpp_http.py --model M.gguf --alias NAME --port P [--n-ctx N] [--parallel K]
                           [--chat-template FILE]
"""

from __future__ import annotations

import argparse
import signal
import threading

import xllamacpp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--alias", required=True, help="model name clients use")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192, help="tokens per request")
    parser.add_argument("--parallel", type=int, default=1, help="slots decoded together")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--metrics", action="store_true", help="serve Prometheus /metrics")
    parser.add_argument("--chat-template", help="a Jinja chat template file used instead of the "
                        "model's (one that renders tools lets llama.cpp parse tool calls)")
    args = parser.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.n_parallel = args.parallel
    params.n_ctx = args.n_ctx * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.endpoint_metrics = args.metrics
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as fh:
            params.chat_template = fh.read()
    params.ui = False
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    stop.wait()
    del server  # stops llama.cpp's loop and joins its threads


if __name__ == "__main__":
    main()
