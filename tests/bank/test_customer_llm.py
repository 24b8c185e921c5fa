"""The llm customer behind `bank say`, against a HAND-WRITTEN FAKE chat-completions server (the
faults here, a 500, a body that is no completion, a hang, a refused connection, cannot be
produced by the Dynamo mocker; the well-formed case is checked the same way for its request).

What is checked: the request (model, temperature 0, non-streaming, persona, goals and the
conversation in the prompt, the key as a bearer token), the reply and its timed record (role
user_simulator), the end signal, the turn limit, and that a failing endpoint is an error with
nothing recorded, never a made-up message; also that the key reaches no file when the bank
service forwards it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from contracts.conversation import SayReply
from contracts.llm_calls import USER_SIMULATOR_ROLE, LLMCallRecord
from tests.support.bank_harness import BANK_SCRIPT, FIXTURES, Bank, import_task_modules, write_brief
from tests.support.threaded_http import serve_in_thread

KEY = "sk-test-never-on-disk-7781"
GOALS = ["Find out how much money is in my checking account",
         "Move $800 from my savings into checking"]


class FakeChatServer:
    """A hand-written fake OpenAI-compatible endpoint: answers each POST with the next scripted
    (status, body, delay) and keeps every request it saw."""

    def __init__(self) -> None:
        self.script: list[tuple[int, bytes, float]] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": json.loads(body)})
                status, payload, delay = fake.script.pop(0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (the timeout case)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        serve_in_thread(self.server)

    def answer(self, content: str, status: int = 200, delay: float = 0.0) -> None:
        body = {"id": "x", "object": "chat.completion", "model": "sim",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 321, "completion_tokens": 17, "total_tokens": 338}}
        self.script.append((status, json.dumps(body).encode(), delay))

    def raw(self, status: int, payload: bytes) -> None:
        self.script.append((status, payload, 0.0))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeChatServer]:
    server = FakeChatServer()
    yield server
    server.close()


@pytest.fixture
def talk(tmp_path: Path, python: str) -> Bank:
    folder = tmp_path / "app"
    shutil.copytree(FIXTURES, folder)
    write_brief(folder, GOALS, name="Walter Brennan", tone="formal")
    return Bank(bank_dir=folder, intents=tmp_path / "logs" / "intents.jsonl", python=python)


def llm_env(fake: FakeChatServer, **extra: str) -> dict[str, str]:
    return {"BANK_CUSTOMER": "llm", "BANK_USER_BASE_URL": fake.url,
            "BANK_USER_MODEL": "sim-model", "BANK_USER_API_KEY": KEY, **extra}


def conversation(bank: Bank) -> list[dict]:
    path = bank.intents.with_name("conversation.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_customer_speaks_through_the_endpoint_and_the_call_is_timed(talk, fake):
    fake.answer("I would like to know my checking balance, please.")
    before = time.time_ns()
    done = talk.run("say", "Good afternoon, how may I help?", **llm_env(fake))
    assert done.returncode == 0, done.stderr
    reply = SayReply.model_validate_json(done.stdout)
    assert reply.customer == "I would like to know my checking balance, please."
    assert (reply.turn, reply.ended, reply.customer_kind) == (1, False, "llm")
    [record] = [LLMCallRecord.model_validate(r) for r in reply.simulator_calls]
    assert record.role == USER_SIMULATOR_ROLE and record.model == "sim-model"
    assert (record.attempt, record.turn, record.step, record.scenario_id) == (
        1, 1, 0, "banking-000")
    assert record.send_ns is not None and record.end_ns is not None
    assert record.send_ns <= record.read_ns[0] == record.end_ns
    assert before <= record.start_unix_ns <= time.time_ns()
    assert record.read_content_chars == [len(reply.customer)]
    assert (record.prompt_tokens, record.completion_tokens, record.token_source) == (
        321, 17, "server")
    assert record.http_status == 200 and record.error is None
    [request] = fake.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    body = request["body"]
    assert body["model"] == "sim-model" and body["temperature"] == 0.0
    assert body["stream"] is False
    prompt = "\n".join(m["content"] for m in body["messages"])
    for text in ("Walter Brennan", *GOALS, "Customer: Hi, I got paid.",
                 "Agent: Good afternoon, how may I help?", "CONVERSATION_COMPLETE"):
        assert text in prompt
    assert conversation(talk)[-1]["customer_kind"] == "llm"
    # named by model, endpoint host and prompt hash; never the key or the URL's path
    host = fake.url.split("//")[1].split("/")[0]
    named = conversation(talk)[-1]["customer"]
    assert named.startswith(f"llm sim-model @ {host} prompt sha256:") and KEY not in named


def test_the_end_signal_ends_the_conversation_satisfied(talk, fake):
    fake.answer("Hello, my balance please.")
    fake.answer("That is all, thank you. Goodbye. CONVERSATION_COMPLETE")
    talk.run("say", "Hello", **llm_env(fake))
    done = talk.run("say", "Your balance is $20.", **llm_env(fake))
    reply = SayReply.model_validate_json(done.stdout)
    assert reply.ended and reply.end_reason == "satisfied"
    assert reply.customer == "That is all, thank you. Goodbye."
    # The second request showed the whole conversation so far.
    prompt = fake.requests[1]["body"]["messages"][-1]["content"]
    assert "Customer: Hello, my balance please." in prompt
    assert "Agent: Your balance is $20." in prompt


def test_the_turn_limit_applies_to_the_llm_customer(talk, fake):
    write_brief(talk.bank_dir, GOALS, max_turns=1, name="Walter Brennan")
    fake.answer("And I want to move money too.")
    reply = SayReply.model_validate_json(talk.run("say", "Hi", **llm_env(fake)).stdout)
    assert reply.ended and reply.end_reason == "turn_limit"
    assert reply.customer == "And I want to move money too."


@pytest.mark.parametrize(("status", "payload", "kind"), [
    (500, b'{"error": "boom"}', "http_500"),
    (200, b"<html>not json</html>", "bad_response"),
    (200, b'{"choices": [{"message": {"content": ""}}]}', "bad_response"),
])
def test_a_failing_endpoint_is_an_error_and_nothing_is_recorded(talk, fake, status, payload,
                                                                kind):
    fake.raw(status, payload)
    done = talk.run("say", "Hello", **llm_env(fake))
    assert done.returncode == 75
    assert done.stderr.count("\n") == 1 and "llm customer" in done.stderr
    [record] = json.loads(done.stdout)["simulator_calls"]
    assert record["error"]["type"] == kind and record["role"] == USER_SIMULATOR_ROLE
    assert conversation(talk) == []
    assert KEY not in done.stdout + done.stderr


def test_a_refused_connection_is_an_error(talk):
    done = talk.run("say", "Hello", BANK_CUSTOMER="llm",
                    BANK_USER_BASE_URL="http://user:secret@127.0.0.1:9/v1",
                    BANK_USER_MODEL="m")
    assert done.returncode == 75
    [record] = json.loads(done.stdout)["simulator_calls"]
    assert record["error"]["type"] == "connection"
    assert "secret" not in done.stdout + done.stderr  # credentials in a URL are not shown


def test_a_hanging_endpoint_times_out(fake, tmp_path, monkeypatch):
    modules = import_task_modules("customer_llm")
    monkeypatch.setattr(modules["customer_llm"], "LLM_TIMEOUT_SEC", 0.3)
    fake.answer("too late", delay=10.0)
    brief = {"scenario_id": "b", "persona": {"name": "x"}, "first_message": "hi",
             "goals": GOALS, "max_turns": 5}
    customer = import_task_modules("customer")["customer"]
    with pytest.raises(customer.CustomerError) as failure:
        modules["customer_llm"].llm_reply(brief, [], "Hello", llm_env(fake), 1, 1)
    [record] = failure.value.calls
    assert record["error"]["type"] == "timeout"
    # Gave up at its own timeout, long before the answer came (the bound leaves a loaded
    # host seconds of slack: 1.57 s was measured under a load of 15 on 2 cores).
    assert 0.25e9 <= record["end_ns"] - record["send_ns"] < 5e9


def test_the_service_forwards_the_settings_and_writes_them_nowhere(talk, fake, tmp_path,
                                                                  python):
    sock, logs = tmp_path / "run" / "bank.sock", tmp_path / "service"
    env = {**os.environ, "BANK_SOCKET": str(sock), "BANK_DIR": str(talk.bank_dir),
           "BANK_INTENTS": str(logs / "intents.jsonl")}
    service_log = tmp_path / "bankd.log"
    with service_log.open("w") as sink:
        process = subprocess.Popen([python, str(BANK_SCRIPT.with_name("bankd.py"))], env=env,
                                   stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 20
            while not sock.exists():
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            fake.answer("My balance, please.")
            done = talk.run("say", "Hello", BANK_SOCKET=str(sock), **llm_env(fake))
            assert done.returncode == 0, done.stderr
            talk.run("call", "get_account_balance", "{}", BANK_SOCKET=str(sock),
                     **llm_env(fake))
        finally:
            process.kill()
            process.wait()
    assert fake.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert SayReply.model_validate_json(done.stdout).customer_kind == "llm"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert logs / "conversation.jsonl" in written
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
