"""LangGraph twins of palgraph's served example graphs `streaming` and `fanout`
(graphs/src/streaming.rs and fanout.rs), node for node.

palgraph emits a custom event {"type":"status","node":N,"message":LINE} when a node with a
status line starts; each twin node writes the same dict with get_stream_writer() as its
first action.
"""
import asyncio
import uuid
from typing import Annotated, Optional

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


# ---------------------------------------------------------------- streaming
class StreamingState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    delay_ms: int            # palgraph: #[state(transient)]; the client sends it every turn
    words: Optional[int]     # palgraph: #[state(transient)]; the client sends it every turn
    fail_after: Optional[int]  # palgraph: #[state(transient)]; fail after this many words


async def write(state: StreamingState):
    get_stream_writer()({"type": "status", "node": "write", "message": "Writing..."})
    question = ""
    for m in reversed(state.get("messages", [])):
        if isinstance(m, HumanMessage):
            question = m.content
            break
    source = question.split()
    n = max(state.get("words") or len(source) * 5, 1)
    delay = (state.get("delay_ms") or 0) / 1000.0
    text = []
    for i in range(n):
        if state.get("fail_after") == i:
            raise RuntimeError(f"the writer failed after {i} words, as the input asked")
        word = source[i % len(source)] if source else "word"
        if delay > 0:                # palgraph: no delay, no sleep (sleep(0) waits a tick)
            await asyncio.sleep(delay)
        text.append(word if i == 0 else " " + word)
    return {"messages": [AIMessage(content="".join(text), id=f"answer-{uuid.uuid4()}",
                                   response_metadata={"finished_reason": "stop"})]}


_s = StateGraph(StreamingState)
_s.add_node("write", write)
_s.add_edge(START, "write")
_s.add_edge("write", END)
streaming = _s.compile()


# ---------------------------------------------------------------- fanout
def findings_reducer(left, right):
    """Append; None resets (emulates palgraph's #[state(transient)]: reset at each turn)."""
    if right is None:
        return []
    return (left or []) + right


class ReviewState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    findings: Annotated[list[str], findings_reducer]


def _last_text(state) -> str:
    msgs = state.get("messages", [])
    return msgs[-1].content if msgs else ""


async def legal(state: ReviewState):
    get_stream_writer()({"type": "status", "node": "legal", "message": "Checking legal wording..."})
    t = _last_text(state).lower()
    f = 'legal: "guarantee" is a promise; qualify it' if "guarantee" in t else "legal: no issues"
    return {"findings": [f]}


async def style(state: ReviewState):
    get_stream_writer()({"type": "status", "node": "style", "message": "Checking style..."})
    return {"findings": [f"style: {len(_last_text(state).split())} words"]}


async def numbers(state: ReviewState):
    get_stream_writer()({"type": "status", "node": "numbers", "message": "Checking numbers..."})
    digits = sum(c.isdigit() for c in _last_text(state))
    return {"findings": [f"numbers: {digits} digits to check"]}


async def summarize(state: ReviewState):
    get_stream_writer()({"type": "status", "node": "summarize", "message": "Summarizing..."})
    return {"messages": [AIMessage(content="\n".join(state.get("findings", [])))]}


_f = StateGraph(ReviewState)
_f.add_node("legal", legal)
_f.add_node("style", style)
_f.add_node("numbers", numbers)
_f.add_node("summarize", summarize)
for r in ("legal", "style", "numbers"):
    _f.add_edge(START, r)
_f.add_edge(["legal", "style", "numbers"], "summarize")   # join: runs once after all three
_f.add_edge("summarize", END)
fanout = _f.compile()
