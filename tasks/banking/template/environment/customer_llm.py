"""The llm customer: one chat-completions request per turn to the customer's own endpoint.

The protocol is the agent leaderboard's user simulator: the model is told the persona and the
scenario's goals, shown the conversation so far, and writes the customer's next message; it
ends the conversation by writing END_SIGNAL (with a goodbye). The prompt is this project's own.
Settings come from the environment of root's `bank say` (the harness's; forwarded in the
request, never written anywhere; bankd.py refuses anyone else's): BANK_USER_BASE_URL (…/v1),
BANK_USER_MODEL, BANK_USER_API_KEY (optional).

Every request becomes a record shaped like contracts/llm_calls.py's LLMCallRecord (role
"user_simulator"; times from perf_counter_ns, which is the same clock for every process of
the machine; `trial_name` empty: the agent, which knows it, fills it in when it logs the
record). Non-streaming: the one read that carried the answer is `read_ns`. A failure raises
CustomerError carrying the failed request's record; nothing is made up. Standard library
only; runs on Python 3.8+.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

from customer import END_SIGNAL, LLM_MAX_TOKENS, LLM_TIMEOUT_SEC, MAX_ERROR_CHARS, CustomerError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ROLE = "user_simulator"

SYSTEM_PROMPT = """You play a bank customer talking to the bank's customer-service agent. \
Stay in character as this person:

{persona}

What you want from the bank today, in this order:
{goals}

How to behave:
- Write only your next message to the agent, in your persona's tone and level of detail; \
never write the agent's part.
- Bring up your requests one or two at a time, as a real customer would; when the agent asks \
for a detail, give it if your requests contain it; if they do not, say you do not know it. \
Never invent account numbers or other facts.
- When the agent says it cannot do something, accept that and go on to your next request \
without asking again.
- When every request has been dealt with (done or declined), say goodbye and end your \
message with {end}. Write {end} at no other time."""

USER_PROMPT = """The conversation so far:

{transcript}

Write the customer's next message."""


def llm_identity(settings: dict[str, str]) -> str:
    """Who the llm customer is: its model, the endpoint's host (no path, no credentials) and
    the hash of the prompts that make it a customer."""
    prompt = hashlib.sha256((SYSTEM_PROMPT + "\n" + USER_PROMPT).encode("utf-8")).hexdigest()
    host = urllib.parse.urlsplit(shown_url(settings.get("BANK_USER_BASE_URL", ""))).netloc
    return "llm {} @ {} prompt sha256:{}".format(settings.get("BANK_USER_MODEL", ""), host,
                                                  prompt[:12])


def settings_error(settings: dict[str, str]) -> str | None:
    for name in ("BANK_USER_BASE_URL", "BANK_USER_MODEL"):
        if not settings.get(name):
            return f"BANK_CUSTOMER=llm needs {name} in the environment of `bank say`"
    scheme = urllib.parse.urlsplit(settings["BANK_USER_BASE_URL"]).scheme
    if scheme not in ("http", "https"):
        return f"BANK_USER_BASE_URL must be an http(s) URL, got scheme {scheme!r}"
    return None


def shown_url(url: str) -> str:
    """The URL without any user:password part, for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def messages_for(brief: dict[str, Any], history: list[dict[str, Any]], message: str
                 ) -> list[dict[str, str]]:
    persona = json.dumps(brief["persona"], indent=2, ensure_ascii=False)
    goals = "\n".join(f"{n}. {goal}" for n, goal in enumerate(brief["goals"], 1))
    lines = [] if history else [{"speaker": "customer", "text": brief["first_message"]}]
    lines += list(history) + [{"speaker": "agent", "text": message}]
    transcript = "\n\n".join(
        f"{'Customer' if e.get('speaker') == 'customer' else 'Agent'}: {e.get('text', '')}"
        for e in lines)
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(persona=persona, goals=goals,
                                                           end=END_SIGNAL)},
        {"role": "user", "content": USER_PROMPT.format(transcript=transcript)},
    ]


def new_record(brief: dict[str, Any], model: str, attempt: int, turn: int) -> dict[str, Any]:
    return {
        "request_id": f"user-sim-{uuid.uuid4().hex}", "trial_name": "",
        "scenario_id": str(brief.get("scenario_id", "")), "attempt": attempt, "turn": turn,
        "step": 0, "role": ROLE, "model": model, "session_id": None, "start_unix_ns": 0,
        "send_ns": None, "read_ns": [], "read_content_chars": [], "read_reasoning_chars": [],
        "read_tool_call_chars": [], "end_ns": None, "prompt_tokens": None,
        "completion_tokens": None, "cached_tokens": None, "token_source": None,
        "finish_reason": None, "http_status": None, "retries": 0, "error": None, "server": None,
    }


def failed(record: dict[str, Any], kind: str, message: str, url: str) -> CustomerError:
    record["end_ns"] = time.perf_counter_ns()
    text = message[:MAX_ERROR_CHARS]
    record["error"] = {"type": kind, "message": text}
    return CustomerError(f"the llm customer at {shown_url(url)} failed: {text}", [record])


def llm_reply(brief: dict[str, Any], history: list[dict[str, Any]], message: str,
              settings: dict[str, str], attempt: int, turn: int
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The customer's next line {text, goal_index, kind, ended, end_reason} and the request's
    record; CustomerError when the endpoint fails or answers nothing usable."""
    problem = settings_error(settings)
    if problem:
        raise CustomerError(problem)
    base, model = settings["BANK_USER_BASE_URL"].rstrip("/"), settings["BANK_USER_MODEL"]
    url = base + "/chat/completions"
    body = json.dumps({"model": model, "messages": messages_for(brief, history, message),
                       "temperature": 0.0, "max_tokens": LLM_MAX_TOKENS, "stream": False,
                       }).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if settings.get("BANK_USER_API_KEY"):
        headers["Authorization"] = f"Bearer {settings['BANK_USER_API_KEY']}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    record = new_record(brief, model, attempt, turn)
    record["start_unix_ns"] = time.time_ns()
    record["send_ns"] = time.perf_counter_ns()
    try:
        with urllib.request.urlopen(request, timeout=LLM_TIMEOUT_SEC) as response:
            record["http_status"] = response.status
            raw = response.read()
    except urllib.error.HTTPError as exc:
        record["http_status"] = exc.code
        detail = exc.read(MAX_ERROR_CHARS).decode("utf-8", "replace") if exc.fp else ""
        raise failed(record, f"http_{exc.code}", f"HTTP {exc.code}: {detail}".strip(), url
                     ) from None
    except (TimeoutError, OSError) as exc:  # socket.timeout is an OSError before 3.10
        reason = getattr(exc, "reason", exc)
        kind = "timeout" if "timed out" in str(reason) else "connection"
        raise failed(record, kind, f"{kind}: {reason}", url) from None
    record["end_ns"] = time.perf_counter_ns()
    text, finish, usage = parse_completion(raw)
    if text is None:
        raise failed(record, "bad_response", "no message content in the response: "
                     + raw[:MAX_ERROR_CHARS].decode("utf-8", "replace"), url)
    record["read_ns"] = [record["end_ns"]]
    record["read_content_chars"] = [len(text)]
    record["finish_reason"] = finish
    if isinstance(usage, dict):
        record["prompt_tokens"] = usage.get("prompt_tokens")
        record["completion_tokens"] = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            record["cached_tokens"] = details.get("cached_tokens")
        if record["prompt_tokens"] is not None or record["completion_tokens"] is not None:
            record["token_source"] = "server"
    return customer_text(text), [record]


def parse_completion(raw: bytes) -> tuple[str | None, str | None, Any]:
    """(message content, finish reason, usage) of a chat completion; content None when the
    body is not one."""
    try:
        data = json.loads(raw.decode("utf-8"))
        choice = data["choices"][0]
        content = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, None, None
    if not isinstance(content, str) or not content.strip():
        return None, None, None
    return content, choice.get("finish_reason"), data.get("usage")


def customer_text(content: str) -> dict[str, Any]:
    """The model's message as a customer line: the end signal removed and turned into the
    end of the conversation."""
    ended = END_SIGNAL in content
    text = content.replace(END_SIGNAL, "").strip()
    return {"text": text or "Goodbye.", "goal_index": None, "kind": "llm", "ended": ended,
            "end_reason": "satisfied" if ended else None}
