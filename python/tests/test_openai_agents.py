"""The OpenAI Agents SDK adapter, driven end to end by the SDK's own scripted test model: no
network, no key."""

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunContextWrapper,
    RunState,
    Runner,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailTripwireTriggered,
    WebSearchTool,
    function_tool,
    set_tracing_disabled,
    tool_input_guardrail,
)
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from pydantic import BaseModel

import exec_host
from exec_host import _adapters
from exec_host.openai_agents import CodeMode

set_tracing_disabled(True)

ran: list[str] = []


@pytest.fixture(autouse=True)
def _forget() -> None:
    ran.clear()


class Forecast(BaseModel):
    city: str
    celsius: float


@function_tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    ran.append(f"add {a} {b}")
    return a + b


@function_tool
async def forecast(city: str) -> Forecast:
    """The weather in a city."""
    ran.append(f"forecast {city}")
    return Forecast(city=city, celsius=21.5)


@function_tool
def listing(folder: str) -> str:
    """Lists a folder, as JSON text."""
    return json.dumps({"folder": folder, "files": ["a.md", "b.md"]})


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


async def over_100(_context: RunContextWrapper[Any], params: dict[str, Any], _call_id: str) -> bool:
    return params.get("amount", 0) > 100


@function_tool(needs_approval=over_100)
def pay(amount: int) -> str:
    """Pays an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


@function_tool
def crash() -> str:
    """Fails, and the SDK's default formatter hides why."""
    raise ValueError("disk on fire")


@function_tool(failure_error_function=lambda _context, error: f"crash_politely failed: {error}")
def crash_politely() -> str:
    """Fails, and its formatter says why."""
    raise ValueError("disk on fire")


@function_tool(failure_error_function=None)
def crash_loudly() -> str:
    """Fails, and the SDK would raise."""
    raise ValueError("disk on fire")


@function_tool(timeout=0.05)
async def dawdle() -> str:
    """Takes too long."""
    await asyncio.sleep(5)
    return "late"


def outputs(model: ScriptedModel, call: int = -1) -> dict[str, Any]:
    """The function_call_output items the model was given in a call, by call id."""
    items = model.calls[call].input
    return {item["call_id"]: item["output"] for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"}


def exec_call(code: str, call_id: str) -> Any:
    return function_call("Exec", {"code": code}, call_id=call_id)


def test_the_model_sees_only_exec_and_a_script_calls_two_tools_at_once(store) -> None:
    both_called = asyncio.Event()
    arrived: list[str] = []

    @function_tool
    async def meet(name: str) -> str:
        """Waits until both calls have arrived, so only concurrent calls finish."""
        arrived.append(name)
        if len(arrived) == 2:
            both_called.set()
        await asyncio.wait_for(both_called.wait(), 10)
        return f"met {name}"

    async def main() -> None:
        async with await CodeMode.open([add, forecast, listing, meet], **store) as code:
            script = """
                const [sum, weather, met] = await Promise.all([
                    tools.add({a: 2, b: 40}), tools.forecast({city: "Oslo"}),
                    Promise.all([tools.meet({name: "x"}), tools.meet({name: "y"})]),
                ]);
                const folder = await tools.listing({folder: "docs"});
                return {sum, weather, met, files: folder.files};
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("42, and 21.5 in Oslo")]])
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            assert result.final_output == "42, and 21.5 in Oslo"
            [offered] = model.calls[0].tools
            assert offered.name == "Exec" and isinstance(offered, FunctionTool)
            assert offered.strict_json_schema is False
            # exec-host's catalogue names the tools; a script asks ToolSearch for their parameters.
            assert {"add", "forecast", "listing", "meet"} <= set(offered.description.splitlines())
            assert json.loads(outputs(model)["c1"]) == {
                "sum": 42,
                "weather": {"city": "Oslo", "celsius": 21.5},
                "met": ["met x", "met y"],
                "files": ["a.md", "b.md"],
            }
            assert sorted(ran) == ["add 2 40", "forecast Oslo"]

    asyncio.run(main())


def test_an_inner_failure_rejects_in_the_script_with_what_the_sdk_lets_the_model_read(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([crash, crash_politely, crash_loudly, dawdle], **store) as code:
            script = """
                const said = [];
                for (const name of ["crash", "crash_politely", "crash_loudly", "dawdle"]) {
                    try { await tools[name]({}); said.push("resolved"); } catch (e) { said.push(e.message); }
                }
                return said;
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("ok")]])
            await Runner.run(Agent(name="a", model=model, tools=[code.tool]), "go")
            said = json.loads(outputs(model)["c1"])
            expected = [
                "ToolError: An error occurred while running the tool. Please try again.",
                "ToolError: crash_politely failed: disk on fire",
                "ValueError: disk on fire",
                "ToolError: Tool 'dawdle' timed out after 0.05 seconds.",
            ]
            # exec-host names the tool before the message, unless the message names it already.
            assert len(said) == 4 and all(message.endswith(end) for message, end in zip(said, expected)), said

    asyncio.run(main())


def test_an_approval_interrupts_the_run_survives_serialization_and_runs_the_call_once(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([add, delete_file], **store) as code:
            script = """
                const n = await tools.add({a: 1, b: 1});
                const deleted = await tools.delete_file({path: "notes/x" + n});
                return {n, deleted};
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("done")]])
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            assert result.final_output is None
            [item] = result.interruptions
            assert item.name == "Exec"
            [waiting] = await code.pending(item)
            assert (waiting.tool, waiting.input) == ("delete_file", {"path": "notes/x2"})
            assert ran == ["add 1 1"], "the script ran up to the call that asks"

            state = await RunState.from_string(agent, result.to_state().to_string())
            state.approve(state.get_interruptions()[0])
            result = await Runner.run(agent, state)
            assert result.final_output == "done"
            assert ran == ["add 1 1", "delete notes/x2"], "add was not made again"
            assert json.loads(outputs(model)["c1"]) == {"n": 2, "deleted": "deleted notes/x2"}
            assert await code.session.parked_execs() == []

    asyncio.run(main())


def test_approving_the_exec_tool_for_good_lets_later_scripts_calls_run(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([delete_file], **store) as code:
            model = ScriptedModel(
                [
                    [exec_call("return await tools.delete_file({path: 'a'})", "c1")],
                    [exec_call("return await tools.delete_file({path: 'b'})", "c2")],
                    [assistant_message("done")],
                ]
            )
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            state = result.to_state()
            state.approve(result.interruptions[0], always_approve=True)
            result = await Runner.run(agent, state)
            assert result.final_output == "done" and result.interruptions == []
            assert outputs(model) == {"c1": "deleted a", "c2": "deleted b"}
            assert ran == ["delete a", "delete b"]

    asyncio.run(main())


def test_calls_are_answered_one_by_one(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([delete_file], **store) as code:
            script = """
                const tries = ["a", "b"].map(path => tools.delete_file({path}).catch(e => "refused: " + e.message));
                return await Promise.all(tries);
            """
            model = ScriptedModel(
                [[exec_call(script, "c1")], [assistant_message("one")], [exec_call(script, "c2")], [assistant_message("none")]]
            )
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            [item] = result.interruptions
            first, second = await code.pending(item)
            assert [first.input, second.input] == [{"path": "a"}, {"path": "b"}]
            state = result.to_state()
            await code.decide(state, item, approve=[first.id], deny={second.id: "keep b"})
            result = await Runner.run(agent, state)
            assert result.final_output == "one"
            assert json.loads(outputs(model)["c1"]) == ["deleted a", "refused: `delete_file` was denied: keep b"]
            assert ran == ["delete a"]

            result = await Runner.run(agent, "again")
            [item] = result.interruptions
            state = result.to_state()
            with pytest.raises(ValueError, match="waits on calls"):
                await code.decide(state, item, approve=[7])
            await code.deny(state, item, "not today")
            result = await Runner.run(agent, state)
            assert result.final_output == "none"
            assert json.loads(outputs(model)["c2"]) == ["refused: `delete_file` was denied: not today"] * 2
            assert ran == ["delete a"]

    asyncio.run(main())


def test_rejecting_the_exec_discards_its_parked_script(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([delete_file], **store) as code:
            model = ScriptedModel(
                [
                    [exec_call("return await tools.delete_file({path: 'a'})", "c1")],
                    [assistant_message("understood")],
                    [exec_call("return await tools.delete_file({path: 'b'})", "c2")],
                    [assistant_message("understood again")],
                ]
            )
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            assert len(await code.session.parked_execs()) == 1
            state = result.to_state()
            state.reject(result.interruptions[0], rejection_message="no deleting")  # the SDK's own way
            result = await Runner.run(agent, state)
            assert result.final_output == "understood"
            assert outputs(model)["c1"] == "no deleting"
            assert await code.session.parked_execs() == []

            result = await Runner.run(agent, "go on")
            state = result.to_state()
            await code.reject(state, result.interruptions[0], "still no")  # discards at once
            assert await code.session.parked_execs() == []
            result = await Runner.run(agent, state)
            assert result.final_output == "understood again" and outputs(model)["c2"] == "still no"
            assert ran == []

    asyncio.run(main())


def test_a_callable_policy_asks_per_call_and_a_call_that_asks_after_the_resume_is_refused(store) -> None:
    async def main() -> None:
        async with await CodeMode.open([pay], **store) as code:
            script = """
                const small = await tools.pay({amount: 5});
                const big = await tools.pay({amount: 500});
                let again;
                try { again = await tools.pay({amount: 900}); } catch (e) { again = e.message; }
                return {small, big, again};
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("ok")]])
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            [item] = result.interruptions
            assert [call.input for call in await code.pending(item)] == [{"amount": 500}]
            assert ran == ["pay 5"]
            state = result.to_state()
            state.approve(item)
            await Runner.run(agent, state)
            value = json.loads(outputs(model)["c1"])
            assert (value["small"], value["big"]) == ("paid 5", "paid 500")
            assert "cannot ask again" in value["again"]
            assert ran == ["pay 5", "pay 500"]

    asyncio.run(main())


def test_another_code_mode_resumes_a_serialized_run_in_the_same_store_and_conversation(store) -> None:
    script = """
        const n = await tools.add({a: 20, b: 22});
        const [a, b] = await Promise.all(["a", "b"].map(path => tools.delete_file({path}).catch(e => "refused: " + e.message)));
        return {n, a, b};
    """
    rejected = "return await tools.delete_file({path: 'c'})"

    async def first_process() -> str:
        async with await CodeMode.open([add, delete_file], conversation="support-42", **store) as code:
            model = ScriptedModel([[exec_call(script, "c1"), exec_call(rejected, "c2")]])
            agent = Agent(name="a", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            item, other = result.interruptions
            state = result.to_state()
            first, second = await code.pending(item)
            await code.decide(state, item, approve=[second.id], deny={first.id: "not a"})
            state.reject(other, rejection_message="not c")  # the SDK's own way: the adapter hears of it later
            assert len(await code.session.parked_execs()) == 2
            return state.to_string()

    async def second_process(saved: str) -> None:
        async with await CodeMode.open([add, delete_file], conversation="support-42", **store) as code:
            model = ScriptedModel([[assistant_message("resumed")]])
            agent = Agent(name="a", model=model, tools=[code.tool])
            state = await RunState.from_string(agent, saved)
            item = state.get_interruptions()[0]
            assert [call.input for call in await code.pending(item)] == [{"path": "a"}, {"path": "b"}]
            result = await Runner.run(agent, state)
            assert result.final_output == "resumed"
            assert json.loads(outputs(model, 0)["c1"]) == {"n": 42, "a": "refused: `delete_file` was denied: not a", "b": "deleted b"}
            assert outputs(model, 0)["c2"] == "not c"
            assert await code.session.parked_execs() == [], "the rejected script was discarded here"

    saved = asyncio.run(first_process())
    assert ran == ["add 20 22"]
    asyncio.run(second_process(saved))
    assert ran == ["add 20 22", "delete b"], "the decisions made in the first process were kept"


def test_two_execs_of_one_turn_run_at_once_each_with_its_own_context(store) -> None:
    both_called = asyncio.Event()
    seen: list[str] = []

    @function_tool
    async def whoami(context: ToolContext[Any]) -> str:
        """Says which call of which agent it serves, once both Execs have called it."""
        seen.append(context.tool_call_id)
        if len(seen) == 2:
            both_called.set()
        await asyncio.wait_for(both_called.wait(), 10)
        return f"{context.tool_call_id} of {context.agent.name}"

    async def main() -> None:
        async with await CodeMode.open([whoami, delete_file], **store) as code:
            model = ScriptedModel(
                [
                    [
                        exec_call("return await tools.whoami({})", "c1"),
                        exec_call("return await tools.whoami({})", "c2"),
                        exec_call("return await tools.delete_file({path: 'p'})", "c3"),
                    ],
                    [assistant_message("ok")],
                ]
            )
            agent = Agent(name="ada", model=model, tools=[code.tool])
            result = await Runner.run(agent, "go")
            assert [item.call_id for item in result.interruptions] == ["c3"]
            state = result.to_state()
            state.approve(result.interruptions[0])
            result = await Runner.run(agent, state)
            assert result.final_output == "ok"
            assert outputs(model) == {"c1": "c1/0 of ada", "c2": "c2/0 of ada", "c3": "deleted p"}
            assert sorted(seen) == ["c1/0", "c2/0"], "the Execs that finished were not run again"
            assert ran == ["delete p"]

    asyncio.run(main())


def test_without_interruptions_the_approver_answers_while_the_script_waits(store) -> None:
    asked: list[exec_host.ApprovalRequest] = []

    async def approver(request: exec_host.ApprovalRequest) -> Any:
        asked.append(request)
        return "once" if request.input["path"] == "ok" else ("deny", "not that one")

    async def main() -> None:
        async with await CodeMode.open([delete_file], interrupt=False, approver=approver, **store) as code:
            script = """
                const a = await tools.delete_file({path: "ok"});
                let b; try { b = await tools.delete_file({path: "no"}); } catch (e) { b = e.message; }
                return {a, b};
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("ok")]])
            result = await Runner.run(Agent(name="a", model=model, tools=[code.tool]), "go")
            assert result.interruptions == []
            value = json.loads(outputs(model)["c1"])
            assert value["a"] == "deleted ok" and "not that one" in value["b"]
            assert [(request.tool, request.exec_id) for request in asked] == [("delete_file", "c1")] * 2

    asyncio.run(main())


def test_inner_guardrails_reject_a_call_or_halt_the_run(store) -> None:
    @tool_input_guardrail
    def no_secrets(data: Any) -> ToolGuardrailFunctionOutput:
        arguments = json.loads(data.context.tool_arguments)
        if arguments["text"] == "secret":
            return ToolGuardrailFunctionOutput.reject_content("no secrets, please")
        if arguments["text"] == "attack":
            return ToolGuardrailFunctionOutput.raise_exception()
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_secrets])
    def echo(text: str) -> str:
        """Echoes."""
        ran.append(f"echo {text}")
        return text

    async def main() -> None:
        async with await CodeMode.open([echo], **store) as code:
            script = """
                const said = [];
                for (const text of ["hi", "secret", "attack", "after"]) {
                    try { said.push(await tools.echo({text})); } catch (e) { said.push(e.message); }
                }
                return said;
            """
            model = ScriptedModel([[exec_call(script, "c1")], [assistant_message("ok")]])
            with pytest.raises(ToolInputGuardrailTripwireTriggered):
                await Runner.run(Agent(name="a", model=model, tools=[code.tool]), "go")
            assert ran == ["echo hi"], "nothing runs after the tripwire"

            script = "try { await tools.echo({text: 'secret'}) } catch (e) { return e.message }"
            model = ScriptedModel([[exec_call(script, "c2")], [assistant_message("ok")]])
            await Runner.run(Agent(name="a", model=model, tools=[code.tool]), "go")
            assert outputs(model)["c2"] == "echo: ToolError: no secrets, please"

    asyncio.run(main())


def test_open_takes_function_tools_only_each_name_once() -> None:
    async def main() -> None:
        with pytest.raises(TypeError, match="not a FunctionTool"):
            await CodeMode.open([add, WebSearchTool()])
        with pytest.raises(ValueError, match="two tools are named 'add'"):
            await CodeMode.open([add, add])

    asyncio.run(main())


def test_without_a_store_a_run_resumes_in_this_process_with_the_decisions_kept() -> None:
    store, key = _adapters.private_store()
    assert oct(os.stat(os.path.dirname(store)).st_mode & 0o777) == "0o700"
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    script = "return await Promise.all(['a', 'b'].map(path => tools.delete_file({path}).catch(e => 'refused: ' + e.message)))"

    async def main() -> None:
        async with await CodeMode.open([delete_file]) as first:
            agent = Agent(name="a", model=ScriptedModel([[exec_call(script, "c1")]]), tools=[first.tool])
            result = await Runner.run(agent, "go")
            [item] = result.interruptions
            a, b = await first.pending(item)
            state = result.to_state()
            await first.decide(state, item, approve=[a.id], deny={b.id: "not b"})
            saved, conversation = state.to_string(), first.conversation
        # Another CodeMode of this process, in the same conversation, finds the script and the decisions.
        async with await CodeMode.open([delete_file], conversation=conversation) as second:
            model = ScriptedModel([[assistant_message("ok")]])
            agent = Agent(name="a", model=model, tools=[second.tool])
            result = await Runner.run(agent, await RunState.from_string(agent, saved))
            assert result.final_output == "ok"
            assert json.loads(outputs(model, 0)["c1"]) == ["deleted a", "refused: `delete_file` was denied: not b"]
            assert await second.session.parked_execs() == []

    asyncio.run(main())
    assert ran == ["delete a"]


def test_the_private_store_is_removed_at_exit() -> None:
    code = "from exec_host import _adapters; print(_adapters.private_store()[0])"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    store = child.stdout.strip()
    assert store and not os.path.exists(os.path.dirname(store))
