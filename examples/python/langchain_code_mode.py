"""Code mode in a LangChain agent: the model writes one script that calls three tools, one of
which asks a person first.

A fake chat model (no network, no key) plays the model: it answers with an `Exec` call, then
with a sentence made from what the script returned. The refund waits for approval: the Exec
parks, the agent stops on an interrupt, this program approves and resumes it.

    pip install "exec-host[langchain]"
    python examples/python/langchain_code_mode.py
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from exec_host.langchain import CodeModeTool

refunds: list[tuple[str, int]] = []


@tool
def get_order(order_id: str) -> dict:
    """Reads an order: its customer, items and total in cents."""
    return {"id": order_id, "customer": "C-7", "items": ["kettle", "mug"], "total_cents": 4250}


@tool
def get_customer(customer_id: str) -> dict:
    """Reads a customer: name and email."""
    return {"id": customer_id, "name": "Ada", "email": "ada@example.com"}


@tool
def refund(order_id: str, cents: int) -> dict:
    """Refunds part or all of an order."""
    refunds.append((order_id, cents))
    return {"order_id": order_id, "refunded_cents": cents, "status": "done"}


SCRIPT = """
const order = await tools.get_order({order_id: "A-1001"});
const customer = await tools.get_customer({customer_id: order.customer});
const done = await tools.refund({order_id: order.id, cents: order.total_cents});
console.log("refunded", done.refunded_cents, "cents to", customer.name);
return {customer: customer.name, refunded_cents: done.refunded_cents};
"""


class FakeChatModel(GenericFakeChatModel):
    """Answers with the scripted messages; once a script's result is in, with a sentence
    made from it. `bind_tools` keeps the tools (create_agent calls it); no streaming."""

    disable_streaming: bool = True
    offered: list[str] = []

    def bind_tools(self, tools: Any, **_: Any) -> "FakeChatModel":
        self.offered = [each.name for each in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.status == "success":
            value = last.artifact["value"]
            answer = f"Done: {value['refunded_cents'] / 100:.2f} refunded to {value['customer']}."
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])
        return super()._generate(messages, *args, **kwargs)


def check(condition: bool, what: str) -> None:
    if not condition:
        sys.exit(f"unexpected: {what}")


def main() -> None:
    # get_order and get_customer change nothing; refund is not read-only, so it asks.
    exec_tool = CodeModeTool(tools=[get_order, get_customer, refund], read_only=["get_order", "get_customer"])
    call = {"name": "Exec", "args": {"code": SCRIPT}, "id": "call_1", "type": "tool_call"}
    model = FakeChatModel(messages=iter([AIMessage(content="", tool_calls=[call])]))
    agent = create_agent(model, [exec_tool], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "support-1"}}

    first = agent.invoke({"messages": [("user", "Refund order A-1001 in full.")]}, config, version="v2")
    check(model.offered == ["Exec"], f"the model is offered {model.offered}")
    check(len(first.interrupts) == 1, f"{len(first.interrupts)} interrupts")
    request = first.interrupts[0].value
    print("The script asks before:")
    for action in request["action_requests"]:
        print(f"  {action['name']}({json.dumps(action['args'])}): {action['description']}")
    check([a["name"] for a in request["action_requests"]] == ["refund"], "the refund is what waits")
    check(refunds == [], "nothing is refunded before the approval")

    print("Approving.")
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config, version="v2")
    check(done.interrupts == (), "the resumed Exec asks again")
    result = next(m for m in done.value["messages"] if isinstance(m, ToolMessage))
    check(result.status == "success", f"the script failed: {result.content}")
    print("The script printed:", *result.artifact["logs"])
    check(refunds == [("A-1001", 4250)], f"refunds made: {refunds}")
    answer = done.value["messages"][-1].content
    check(answer == "Done: 42.50 refunded to Ada.", f"the final answer is {answer!r}")
    print("Final answer:", answer)


if __name__ == "__main__":
    main()
