"""pydantic-ai code mode on exec-host, with an approval.

An agent's tools sit behind one `Exec` tool. The (scripted) model writes one JavaScript script
that looks up the weather in two cities at once and emails a summary; sending email needs
approval, so the script parks and the run ends asking for it. We print what it asks, approve,
and the next run continues the script where it stopped: the weather is not looked up again.

The model is a pydantic-ai `FunctionModel` playing a fixed part, so this runs offline with no
API key. From the repository root, in a virtual environment with `exec-host[pydantic-ai]`:

    python examples/python/pydantic_ai_code_mode.py

It exits with status 1 if anything goes otherwise than described.
"""

from __future__ import annotations

import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import FunctionToolset

from exec_host.pydantic_ai import CodeModeToolset

calls: list[str] = []
tools = FunctionToolset()


@tools.tool_plain
async def get_weather(city: str) -> dict[str, object]:
    """The weather in a city now."""
    calls.append(f"get_weather {city}")
    await asyncio.sleep(0.01)
    return {"city": city, "celsius": {"Oslo": 4, "Lisbon": 19}.get(city, 12)}


@tools.tool_plain(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Sends an email (asks for approval first)."""
    calls.append(f"send_email {to}")
    return f"sent to {to}"


SCRIPT = """
const [oslo, lisbon] = await Promise.all(["Oslo", "Lisbon"].map(city => tools.get_weather({city})));
const warmer = oslo.celsius > lisbon.celsius ? oslo : lisbon;
const body = `${warmer.city} is warmer: ${warmer.celsius} C.`;
console.log(body);
const receipt = await tools.send_email({to: "ada@example.com", body});
return {warmer: warmer.city, receipt};
"""


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: one Exec call, then an answer from what the script returned."""
    requests = [message for message in messages if isinstance(message, ModelRequest)]
    results = [part for request in requests for part in request.parts if isinstance(part, ToolReturnPart)]
    if not results:
        return ModelResponse(parts=[ToolCallPart("Exec", {"code": SCRIPT}, tool_call_id="exec-1")])
    return ModelResponse(parts=[TextPart(f"Done. The script said:\n{results[-1].model_response_str()}")])


def fail(why: str) -> None:
    print(f"FAILED: {why}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    # Parked scripts are kept in a private temporary store of this process; give
    # `state_store=` (and `state_key_file=`) to resume them in another process.
    toolset = CodeModeToolset(tools)
    agent = Agent(FunctionModel(model), toolsets=[toolset], output_type=[str, DeferredToolRequests])

    first = agent.run_sync("Which is warmer, Oslo or Lisbon? Email Ada the answer.")
    if not isinstance(first.output, DeferredToolRequests):
        fail(f"the run should have asked for approval, it answered {first.output!r}")
    answers = {}
    for call in first.output.approvals:
        parked = first.output.metadata[call.tool_call_id]["exec_host"]
        for approval in parked["approvals"]:
            print(f"The script asks to call {approval['tool']} with {approval['input']} ({approval['why']}): approved.")
        answers[call.tool_call_id] = True
    weather = ["get_weather Lisbon", "get_weather Oslo"]  # looked up concurrently: either order
    if sorted(calls) != weather:
        fail(f"before the approval, the calls made were {calls}")

    second = agent.run_sync(
        message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(approvals=answers)
    )
    print(second.output)

    if sorted(calls[:2]) != weather or calls[2:] != ["send_email ada@example.com"]:
        fail(f"each call should have run once, the calls made were {calls}")
    expected = ['"receipt":"sent to ada@example.com"', "Lisbon is warmer: 19 C."]
    if not isinstance(second.output, str) or not all(text in second.output for text in expected):
        fail(f"unexpected answer {second.output!r}")


if __name__ == "__main__":
    main()
