"""Code mode with the OpenAI Agents SDK, offline: a scripted model answers with one `Exec`
script that looks up an order and its customer at once, then refunds the order. The refund
needs a person's approval, so the run stops with an interruption; the example prints what it
was asked, approves, and the run resumes the parked script where it stopped.

    python examples/python/openai_agents_code_mode.py    # with exec-host[openai-agents] installed

It exits with status 1 if anything is not as expected.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from exec_host.openai_agents import CodeMode

ORDERS = {"A-1001": {"order_id": "A-1001", "customer_id": "C-7", "total": 42.5, "status": "delivered"}}
CUSTOMERS = {"C-7": {"customer_id": "C-7", "name": "Ada", "tier": "gold"}}
calls: list[str] = []


@function_tool
def get_order(order_id: str) -> dict[str, Any]:
    """An order: its customer, total and status."""
    calls.append(f"get_order {order_id}")
    return ORDERS[order_id]


@function_tool
def get_customer(customer_id: str) -> dict[str, Any]:
    """A customer: name and tier."""
    calls.append(f"get_customer {customer_id}")
    return CUSTOMERS[customer_id]


@function_tool(needs_approval=True)
def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refunds an amount of an order to the customer."""
    calls.append(f"refund {order_id} {amount}")
    return {"order_id": order_id, "refunded": amount}


# What the scripted model writes: both look-ups at once, then the refund.
SCRIPT = """
const [order, customer] = await Promise.all([
  tools.get_order({order_id: "A-1001"}),
  tools.get_customer({customer_id: "C-7"}),
]);
const receipt = await tools.refund({order_id: order.order_id, amount: order.total});
return {customer: customer.name, refunded: receipt.refunded};
"""


def answer_from_the_exec_output(call: Any) -> Any:
    """The model's second turn: its answer, from what the Exec returned."""
    [output] = [item["output"] for item in call.input if isinstance(item, dict) and item.get("type") == "function_call_output"]
    value = json.loads(output)
    return [assistant_message(f"Refunded {value['refunded']} to {value['customer']}.")]


def fail(why: str) -> None:
    print(f"FAILED: {why}", file=sys.stderr)
    sys.exit(1)


async def main() -> None:
    set_tracing_disabled(True)  # no key, no network: nothing is sent anywhere
    model = ScriptedModel([[function_call("Exec", {"code": SCRIPT}, call_id="call_1")], ModelStep.respond(answer_from_the_exec_output)])

    # The parked script is kept in a private temporary store of this process; give
    # `state_store=` (and `conversation=`) to resume a saved RunState in another process.
    async with await CodeMode.open([get_order, get_customer, refund]) as code:
        agent = Agent(name="support", instructions="Help with orders.", model=model, tools=[code.tool])
        result = await Runner.run(agent, "Please refund order A-1001.")
        offered = [tool.name for tool in model.first_call.tools]
        print("The model was offered:", offered)
        if offered != ["Exec"]:
            fail("the model should see the Exec tool only")
        if len(result.interruptions) != 1:
            fail(f"expected one interruption, got {result.interruptions}")
        if calls != ["get_order A-1001", "get_customer C-7"]:
            fail(f"before the approval, the script should have made the two look-ups only: {calls}")

        state = result.to_state()
        for item in result.interruptions:
            waiting = await code.pending(item)
            for call in waiting:
                print(f"Approval asked: {call.tool}({json.dumps(call.input)}) because {call.why}")
            if [(call.tool, call.input) for call in waiting] != [("refund", {"order_id": "A-1001", "amount": 42.5})]:
                fail(f"unexpected approvals: {waiting}")
            state.approve(item)  # approves every call the script waits on
        print("Approved; resuming.")

        result = await Runner.run(agent, state)
        print("Final answer:", result.final_output)
        if result.final_output != "Refunded 42.5 to Ada.":
            fail(f"unexpected final answer {result.final_output!r}")
        if calls != ["get_order A-1001", "get_customer C-7", "refund A-1001 42.5"]:
            fail(f"each call should have run once: {calls}")
        model.assert_complete()


if __name__ == "__main__":
    asyncio.run(main())
