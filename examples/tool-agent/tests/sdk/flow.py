"""The tool-agent example through the official Python `langgraph-sdk`.

Usage: python flow.py http://127.0.0.1:PORT OUTBOX_PATH
"""

import asyncio
import json
import sys

import httpx

from langgraph_sdk import get_client
from langgraph_sdk.schema import Command

URL, OUTBOX = sys.argv[1], sys.argv[2]
CHECKS = 0


def ok(cond, what):
    global CHECKS
    if not cond:
        raise AssertionError(what)
    CHECKS += 1
    print(f"ok {CHECKS} - {what}", flush=True)


def sent():
    try:
        with open(OUTBOX) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def sse(text):
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


async def main():
    client = get_client(url=URL)
    schemas = await client.assistants.get_schemas("agent")
    ok(schemas["input_schema"]["properties"]["messages"]["type"] == "array", "input schema from the derived state")
    ok("model_calls" in schemas["state_schema"]["properties"], "state schema lists the agent's fields")

    thread = await client.threads.create()
    tid = thread["thread_id"]
    ask = {"messages": [{"role": "user", "content": "email Ann that the report is ready"}]}
    parts = [p async for p in client.runs.stream(tid, "agent", input=ask, stream_mode=["values", "messages-tuple"])]
    last = [p.data for p in parts if p.event == "values"][-1]
    intr = last["__interrupt__"][0]
    ok(intr["value"]["tool_calls"][0]["name"] == "send_email", "the run stops before send_email")
    ok(intr["value"]["tool_calls"][0]["args"]["to"] == "ann@example.com", "after looking Ann up")
    ok(any(p.event.startswith("messages") for p in parts), "the model's turns stream as messages")
    ok(sent() == [], "nothing sent before approval")
    state = await client.threads.get_state(tid)
    ok(state["next"] == ["tools"], "the thread waits at the tools node")
    calls = state["values"]["messages"][-1].get("tool_calls") or []
    ok([c["name"] for c in calls] == ["send_email"] and calls[0]["type"] == "tool_call",
       "the AI message carries LangChain's tool_calls")
    answers = [m for m in state["values"]["messages"] if m["type"] == "tool"]
    ok(answers and all(m.get("tool_call_id", "").startswith("call_") for m in answers),
       "tool messages name their call (tool_call_id)")

    final = await client.runs.wait(tid, "agent", command=Command(resume="approve"))
    ok(final["messages"][-1]["content"] == "Done: sent to ann@example.com.", "approved: the agent reports the mail sent")
    mails = sent()
    ok(len(mails) == 1 and mails[0]["body"] == "the report is ready", "sent exactly once")
    ok((await client.threads.get(tid))["status"] == "idle", "thread idle")

    t2 = (await client.threads.create())["thread_id"]
    await client.runs.wait(t2, "agent", input={"messages": [{"role": "user", "content": "email Bob that lunch is at noon"}]})
    final = await client.runs.wait(t2, "agent", command=Command(resume={"approve": False, "reason": "not now"}))
    ok("not approved: not now" in final["messages"][-1]["content"], "rejected: the model is told why")
    ok(len(sent()) == 1, "a rejected mail is not sent")

    t3 = (await client.threads.create())["thread_id"]
    final = await client.runs.wait(t3, "agent", input={"messages": [{"role": "user", "content": "email Zed that hi"}]})
    ok("no contact named Zed" in final["messages"][-1]["content"], "a tool error reaches the model")

    # The same agent on the chat contract: the approval is a prompt with options.
    async with httpx.AsyncClient(base_url=URL, timeout=30) as http:
        resp = await http.post("/chat", json={"message": "email Bob that chat works"})
        events = sse(resp.text)
        prompt = [e for e in events if e["type"] == "interrupt"][0]
        ok([o["id"] for o in prompt["options"]] == ["approve", "reject"], "/chat: the approval is a prompt")
        ok(any(e["type"] == "token" for e in events), "/chat: the model's text streams as tokens")
        resume = {"thread_id": resp.headers["x-thread-id"], "resume_value": {"type": "action_choice", "value": "approve"}}
        events = sse((await http.post("/chat/resume", json=resume)).text)
        ok(events[-1]["type"] == "response" and events[-1]["response"] == "Done: sent to bob@example.com.", "/chat/resume: approved and sent")
    ok(len(sent()) == 2 and sent()[1]["body"] == "chat works", "the chat's mail sent once")
    print(f"{CHECKS} checks passed")


asyncio.run(main())
