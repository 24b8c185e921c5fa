"""A trial's session ends the way Dynamo's agent integrations end one: at the trial's end, one
request of its own carrying `x-dynamo-session-final: true` (Dynamo 1.6.1 reads the header off
a request into its agent context; the agent cannot know which request is its last before the
reply). Here through the fault proxy; each trial of a real Harbor run closing its session
once, as the frontend's request trace shows, is test_agent_harbor_e2e.py's (on the shared
stack: a KV router with session affinity)."""

from __future__ import annotations

import json

import pytest

from agents.llm import SESSION_FINAL_HEADER, CallInfo, ClientSettings, StreamingClient
from contracts.llm_calls import SESSION_CLOSE_ROLE
from tests.support.fault_proxy import FaultProxy, FaultSchedule

pytestmark = pytest.mark.dynamo


@pytest.mark.parametrize("session_header", [True, False])
async def test_close_is_one_token_with_the_final_header_and_no_script_turn(scripted_stack,
                                                                           session_header):
    settings = ClientSettings(base_url="", model=scripted_stack.model,
                              session_header=session_header,
                              nvext_annotations=["output_replay_id:timing:{request_index}"])
    async with FaultProxy(scripted_stack.base_url, FaultSchedule([])) as proxy:
        client = StreamingClient(settings.model_copy(update={"base_url": proxy.base_url}))
        try:
            record = await client.close_session(CallInfo("t", "timing", 1, 0, SESSION_CLOSE_ROLE,
                                                         "sess-x"))
        finally:
            await client.aclose()
    if not session_header:  # no session was opened: nothing to close, nothing sent
        assert record is None and proxy.requests == []
        return
    ((headers, body),) = proxy.requests
    assert headers["x-dynamo-session-id"] == "sess-x"
    assert headers[SESSION_FINAL_HEADER] == "true"
    sent = json.loads(body)
    assert sent["max_tokens"] == 1
    assert "annotations" not in sent.get("nvext", {})  # the agent's script is not consumed
    assert record is not None and record.role == SESSION_CLOSE_ROLE and record.error is None
