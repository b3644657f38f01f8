"""acon's replayed view as the LangChain messages a `create_agent` state would hold.

Each message carries the id of the entry it renders (`e<id>`; the standing summary is `summary`), so
what LangChain's middleware keeps or summarizes maps back onto entries exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from optimizer.context.history import Entry, EntryKind

SUMMARY_ID = "summary"


def message_id(entry: Entry) -> str:
    return SUMMARY_ID if entry.kind is EntryKind.SUMMARY else f"e{entry.id}"


def entry_id(message_id_: str) -> int | None:
    return int(message_id_[1:]) if message_id_.startswith("e") else None


def to_langchain(view: Sequence[Entry]) -> list[AnyMessage]:
    messages: list[AnyMessage] = []
    for entry in view:
        mid = message_id(entry)
        if entry.kind is EntryKind.ACTION:
            calls = [{"name": c.name, "args": dict(c.arguments), "id": c.id, "type": "tool_call"} for c in entry.calls]
            messages.append(AIMessage(content=entry.answer or "", tool_calls=calls, id=mid))
        elif entry.kind is EntryKind.RESULT:
            call = entry.call
            messages.append(
                ToolMessage(
                    entry.content,
                    tool_call_id=call.id if call else "?",
                    name=call.name if call else None,
                    status="error" if entry.is_error else "success",
                    id=mid,
                )
            )
        else:  # task, later user turns, harness notices and the standing summary are user-side text
            messages.append(HumanMessage(content=entry.content, id=mid))
    return messages
