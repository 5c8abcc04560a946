"""The pydantic-ai code-mode adapter, driven end to end by `FunctionModel` (no network, no key)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolDefinition
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import CombinedToolset, ExternalToolset, FunctionToolset

import exec_host
from exec_host.pydantic_ai import CodeMode, CodeModeToolset


# --- a scripted model -------------------------------------------------------------------------


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    requests = [message for message in messages if isinstance(message, ModelRequest)]
    return [part for request in requests for part in request.parts if isinstance(part, ToolReturnPart)]


def scripted(*turns: Any, seen: list[AgentInfo] | None = None) -> FunctionModel:
    """A model that answers its N-th request with the N-th turn: a script (one Exec call, id
    `exec-N`), a list of scripts (Exec calls in one response, ids `exec-N-M`), and once the
    turns are used up, text saying how each of the last response's calls came out."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        responses = sum(isinstance(message, ModelResponse) for message in messages)
        if responses < len(turns):
            turn = turns[responses]
            if isinstance(turn, str):
                return ModelResponse(parts=[ToolCallPart("Exec", {"code": turn}, tool_call_id=f"exec-{responses + 1}")])
            ids = [f"exec-{responses + 1}-{i + 1}" for i in range(len(turn))]
            return ModelResponse(parts=[ToolCallPart("Exec", {"code": code}, tool_call_id=id) for code, id in zip(turn, ids)])
        last = [message for message in messages if isinstance(message, ModelResponse)][-1]
        ids = {part.tool_call_id for part in last.parts if isinstance(part, ToolCallPart)}
        results = [part for part in tool_returns(messages) if part.tool_call_id in ids]
        return ModelResponse(parts=[TextPart("\n".join(f"{part.outcome}: {part.model_response_str()}" for part in results))])

    return FunctionModel(respond)


# --- the wrapped tools ------------------------------------------------------------------------


@dataclass
class Deps:
    user: str = "Ada"
    log: list[Any] = field(default_factory=list)


class Order(BaseModel):
    item: str
    quantity: int = 1


def inner_tools() -> FunctionToolset[Deps]:
    tools: FunctionToolset[Deps] = FunctionToolset()

    @tools.tool_plain
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @tools.tool
    async def place_order(ctx: RunContext[Deps], order: Order) -> dict[str, Any]:
        """Places an order for the user."""
        await asyncio.sleep(0)
        ctx.deps.log.append(("place_order", order.item, ctx.tool_name, ctx.tool_call_id))
        return {"for": ctx.deps.user, "item": order.item, "quantity": order.quantity}

    @tools.tool_plain
    def even(n: int) -> int:
        """Returns n, which must be even."""
        if n % 2:
            raise ModelRetry("n must be even")
        return n

    @tools.tool_plain
    def broken() -> str:
        """Always fails."""
        raise ValueError("the disk is on fire")

    @tools.tool
    def note(ctx: RunContext[Deps], text: str) -> str:
        """Writes a note (no approval needed)."""
        ctx.deps.log.append(("note", text))
        return f"noted {text}"

    @tools.tool(requires_approval=True)
    def delete_file(ctx: RunContext[Deps], path: str) -> str:
        """Deletes a file (needs approval)."""
        ctx.deps.log.append(("delete_file", path, ctx.tool_call_approved))
        return f"deleted {path}"

    return tools


def parking_agent(model: FunctionModel, store: dict[str, str], **options: Any) -> Agent[Deps, Any]:
    toolset = CodeModeToolset(inner_tools(), **store, **options)
    return Agent(model, deps_type=Deps, toolsets=[toolset], output_type=[str, DeferredToolRequests])


def parked_in(store: dict[str, str], conversation: str) -> list[exec_host.Paused]:
    """The scripts parked in `store` for `conversation`, as another session of it finds them."""

    async def parked() -> list[exec_host.Paused]:
        async with await exec_host.Session.open(**store, conversation=conversation) as session:
            return await session.parked_execs()

    # On a thread of its own: `asyncio.run` here would drop the loop `run_sync` keeps.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, parked()).result()


def value_of(output: str) -> Any:
    """The value a script returned, from the model's reading of a successful Exec."""
    assert output.startswith("success: "), output
    text = output.removeprefix("success: ")
    return json.loads(text.split("Return value:\n", 1)[1] if "Return value:\n" in text else text)


# --- what the model sees, and scripts that run through ----------------------------------------


def test_the_model_sees_one_tool_and_the_names_a_script_can_call():
    seen: list[AgentInfo] = []
    agent = Agent(scripted("return 1", seen=seen), deps_type=Deps, toolsets=[CodeModeToolset(inner_tools())])
    result = agent.run_sync("go", deps=Deps())

    [exec_tool] = seen[0].function_tools
    assert exec_tool.name == "Exec"
    assert exec_tool.parameters_json_schema["required"] == ["code"]
    assert "tools.ToolSearch" in exec_tool.description
    # exec-host's catalogue, in the description: every wrapped tool by name.
    lines = exec_tool.description.splitlines()
    assert {"add", "place_order", "even", "broken", "note", "delete_file"} <= set(lines)
    assert result.output == "success: 1"


def test_a_script_calls_a_sync_and_an_async_tool_with_a_model_argument_and_the_run_context():
    deps = Deps(user="Grace")
    agent = Agent(
        scripted(
            "const sum = await tools.add({a: 2, b: 40});"
            "const order = await tools.place_order({order: {item: 'tea', quantity: sum}});"
            "console.log('sum', sum);"
            "return {sum, order}"
        ),
        deps_type=Deps,
        toolsets=[CodeModeToolset(inner_tools())],
    )
    result = agent.run_sync("go", deps=deps)

    assert result.output.startswith("success: Console output:\nsum 42\n")
    assert value_of(result.output) == {"sum": 42, "order": {"for": "Grace", "item": "tea", "quantity": 42}}
    # The tool had its own RunContext: its name, an id naming the Exec call and its place.
    assert deps.log == [("place_order", "tea", "place_order", "exec-1/1")]
    [exec_return] = tool_returns(result.all_messages())
    assert exec_return.metadata["exec_host"]["calls"] == ["add", "place_order"]
    assert exec_return.metadata["exec_host"]["logs"] == ["sum 42"]
    # The script's calls count in the run's usage, beside the Exec call.
    assert result.usage.tool_calls == 3


def test_an_inner_tools_error_rejects_in_the_script_which_can_go_on():
    agent = Agent(
        scripted(
            "const out = [];"
            "for (const call of [() => tools.add({a: 'x', b: 1}), () => tools.even({n: 3}), () => tools.broken({})]) {"
            "  try { await call() } catch (e) { out.push(e.message) }"
            "}"
            "out.push(await tools.even({n: 4}));"
            "return out"
        ),
        deps_type=Deps,
        toolsets=[CodeModeToolset(inner_tools())],
    )
    invalid, retry, failure, ok = value_of(agent.run_sync("go", deps=Deps()).output)
    assert "ValidationError" in invalid and "valid integer" in invalid
    assert "ModelRetry: n must be even" in retry
    assert "ValueError: the disk is on fire" in failure
    assert ok == 4


def test_a_failing_script_is_a_failed_tool_result_the_model_reads():
    agent = Agent(
        scripted("console.log('before'); await tools.broken({}); return 'unreached'"),
        deps_type=Deps,
        toolsets=[CodeModeToolset(inner_tools())],
    )
    result = agent.run_sync("go", deps=Deps())
    [exec_return] = tool_returns(result.all_messages())
    assert exec_return.outcome == "failed"
    assert exec_return.content.startswith("The script failed with an uncaught error:")
    assert "ValueError: the disk is on fire" in exec_return.content
    assert "Console output before the failure:\nbefore" in exec_return.content


# --- approvals --------------------------------------------------------------------------------

PARKS = "const n = await tools.note({text: 'first'}); const d = await tools.delete_file({path: 'a.txt'}); return {n, d}"


def test_a_script_parks_on_an_approval_and_resumes_once_approved_without_rerunning_earlier_calls(store):
    deps = Deps()
    agent = parking_agent(scripted(PARKS), store)
    first = agent.run_sync("go", deps=deps)

    assert isinstance(first.output, DeferredToolRequests)
    [call] = first.output.approvals
    assert (call.tool_name, call.tool_call_id) == ("Exec", "exec-1")
    parked = first.output.metadata["exec-1"]["exec_host"]
    assert [(a["tool"], a["input"]) for a in parked["approvals"]] == [("delete_file", {"path": "a.txt"})]
    assert "permissions.ask" in parked["approvals"][0]["why"]
    assert deps.log == [("note", "first")]

    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": True}),
        deps=deps,
    )
    assert value_of(second.output) == {"n": "noted first", "d": "deleted a.txt"}
    # The note ran once, before the park; the approved call ran once, approved.
    assert deps.log == [("note", "first"), ("delete_file", "a.txt", True)]


def test_a_new_toolset_of_this_process_resumes_without_the_metadata():
    # No store given: the process's private one, and the handle this process remembers.
    deps = Deps()
    output_type = [str, DeferredToolRequests]
    first = Agent(scripted(PARKS), deps_type=Deps, toolsets=[CodeModeToolset(inner_tools())], output_type=output_type)
    parked = first.run_sync("go", deps=deps)
    assert isinstance(parked.output, DeferredToolRequests)

    again = Agent(scripted(), deps_type=Deps, toolsets=[CodeModeToolset(inner_tools())], output_type=output_type)
    approved = DeferredToolResults(approvals={"exec-1": True})
    result = again.run_sync(message_history=parked.all_messages(), deferred_tool_results=approved, deps=deps)
    assert value_of(result.output) == {"n": "noted first", "d": "deleted a.txt"}
    assert deps.log == [("note", "first"), ("delete_file", "a.txt", True)]


def test_calls_are_answered_one_by_one_and_one_left_out_parks_again(store):
    deps = Deps()
    script = (
        "const paths = ['keep.txt', 'go.txt', 'later.txt'];"
        "return await Promise.all(paths.map(path => tools.delete_file({path}).catch(e => 'refused: ' + e.message)))"
    )
    agent = parking_agent(scripted(script), store)
    first = agent.run_sync("go", deps=deps)
    entry = first.output.metadata["exec-1"]["exec_host"]
    ids = {a["input"]["path"]: a["id"] for a in entry["approvals"]}
    assert sorted(ids) == ["go.txt", "keep.txt", "later.txt"]

    # Through JSON, as a UI would send them back: ids become strings.
    answers = json.loads(json.dumps({"exec_host": {"approve": [ids["go.txt"]], "deny": {ids["keep.txt"]: "not that one"}}}))
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": True}, metadata={"exec-1": answers}),
        deps=deps,
    )
    assert isinstance(second.output, DeferredToolRequests)
    again = second.output.metadata["exec-1"]["exec_host"]
    assert [a["input"]["path"] for a in again["approvals"]] == ["later.txt"]
    assert again["handle"] != entry["handle"]
    assert deps.log == [("delete_file", "go.txt", True)]

    third = agent.run_sync(
        message_history=second.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": ToolApproved()}),
        deps=deps,
    )
    kept, went, later = value_of(third.output)
    assert kept.startswith("refused: ") and "not that one" in kept
    assert (went, later) == ("deleted go.txt", "deleted later.txt")
    assert deps.log == [("delete_file", "go.txt", True), ("delete_file", "later.txt", True)]


def test_denying_the_exec_call_drops_the_parked_script(store):
    deps = Deps()
    agent = parking_agent(scripted(PARKS), store)
    first = agent.run_sync("go", deps=deps)
    assert isinstance(first.output, DeferredToolRequests)

    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": ToolDenied("not today")}),
        deps=deps,
    )
    assert second.output == "denied: not today"
    assert deps.log == [("note", "first")]

    assert parked_in(store, first.conversation_id) == [], "the script was discarded"


def test_another_process_resumes_and_drops_from_the_messages_alone(store, tmp_path):
    """The first run parks two scripts here; a new Python process, with its own toolset and
    agent, the same store and key, and only the JSON of the history (no metadata: it finds each
    script by its Exec call's id), continues the approved one and drops the denied one."""
    log = tmp_path / "calls.log"
    tools = textwrap.dedent(
        f"""
        from pydantic_ai import RunContext
        from pydantic_ai.toolsets import FunctionToolset

        def make_tools():
            tools = FunctionToolset()

            @tools.tool_plain
            def note(text: str) -> str:
                "Writes a note."
                with open({str(log)!r}, "a") as file:
                    file.write(f"note {{text}}\\n")
                return f"noted {{text}}"

            @tools.tool(requires_approval=True)
            def delete_file(ctx: RunContext, path: str) -> str:
                "Deletes a file."
                with open({str(log)!r}, "a") as file:
                    file.write(f"delete_file {{path}} {{ctx.tool_call_approved}}\\n")
                return f"deleted {{path}}"

            return tools
        """
    )
    (tmp_path / "shared_tools.py").write_text(tools)
    spec = importlib.util.spec_from_file_location("shared_tools", tmp_path / "shared_tools.py")
    assert spec is not None and spec.loader is not None
    shared_tools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared_tools)

    toolset = CodeModeToolset(shared_tools.make_tools(), **store)
    denied = "return await tools.delete_file({path: 'b.txt'})"
    agent = Agent(scripted([PARKS, denied]), toolsets=[toolset], output_type=[str, DeferredToolRequests])
    first = agent.run_sync("go")
    assert sorted(call.tool_call_id for call in first.output.approvals) == ["exec-1-1", "exec-1-2"]
    (tmp_path / "history.json").write_bytes(ModelMessagesTypeAdapter.dump_json(first.all_messages()))

    resume = textwrap.dedent(
        f"""
        import json, pathlib
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
        from exec_host.pydantic_ai import CodeModeToolset
        from shared_tools import make_tools

        def model(messages, info):
            parts = sorted((p for p in messages[-1].parts if isinstance(p, ToolReturnPart)), key=lambda p: p.tool_call_id)
            return ModelResponse(parts=[TextPart("\\n".join(p.outcome + ": " + p.model_response_str() for p in parts))])

        folder = pathlib.Path({str(tmp_path)!r})
        history = ModelMessagesTypeAdapter.validate_json((folder / "history.json").read_bytes())
        store = json.loads({json.dumps(store)!r})
        toolset = CodeModeToolset(make_tools(), **store)
        agent = Agent(FunctionModel(model), toolsets=[toolset], output_type=[str, DeferredToolRequests])
        approvals = {{"exec-1-1": True, "exec-1-2": False}}
        result = agent.run_sync(message_history=history, deferred_tool_results=DeferredToolResults(approvals=approvals))
        print(result.output)
        """
    )
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    child = subprocess.run(
        [sys.executable, "-c", resume], cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": path}
    )
    assert child.returncode == 0, child.stderr
    resumed, dropped = child.stdout.strip().splitlines()
    assert value_of(resumed) == {"n": "noted first", "d": "deleted a.txt"}
    assert dropped.startswith("denied: ")
    assert log.read_text().splitlines() == ["note first", "delete_file a.txt True"]
    assert parked_in(store, first.conversation_id) == [], "the denied script was discarded in the other process"


def test_a_parked_script_continues_once_only(store):
    deps = Deps()
    agent = parking_agent(scripted(PARKS), store)
    first = agent.run_sync("go", deps=deps)
    results = DeferredToolResults(approvals={"exec-1": True}, metadata=first.output.metadata)
    second = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results, deps=deps)
    assert value_of(second.output)["d"] == "deleted a.txt"

    # The same answer again (a retried request, say): the script was taken up already.
    again = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results, deps=deps)
    assert again.output.startswith("failed: ") and "could not continue" in again.output
    assert deps.log == [("note", "first"), ("delete_file", "a.txt", True)]


def test_any_conversation_id_parks_and_resumes(store):
    # exec-host takes 1 to 128 of [A-Za-z0-9._:-]: another id is mapped onto one, the same everywhere.
    deps = Deps()
    agent = parking_agent(scripted(PARKS), store)
    first = agent.run_sync("go", deps=deps, conversation_id="ada@example.com / chat #1")
    assert isinstance(first.output, DeferredToolRequests)
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": True}, metadata=first.output.metadata),
        deps=deps,
    )
    assert second.conversation_id == "ada@example.com / chat #1"
    assert value_of(second.output)["d"] == "deleted a.txt"


def test_a_handler_that_declines_leaves_the_call_to_park(store):
    asked: list[str] = []

    async def handler(ctx: RunContext[Deps], requests: DeferredToolRequests) -> None:
        asked.extend(call.tool_name for call in requests.approvals)
        return None  # a person answers later

    deps = Deps()
    agent = parking_agent(scripted(PARKS), store)
    first = agent.run_sync("go", deps=deps, capabilities=[HandleDeferredToolCalls(handler)])
    assert isinstance(first.output, DeferredToolRequests)
    # Asked about the script's call first, then about the Exec call that parked on it.
    assert asked == ["delete_file", "Exec"]
    assert deps.log == [("note", "first")]


def test_a_handle_deferred_tool_calls_capability_answers_in_place():
    asked: list[tuple[str, dict[str, Any]]] = []

    async def handler(ctx: RunContext[Deps], requests: DeferredToolRequests) -> DeferredToolResults:
        answers: dict[str, Any] = {}
        for call in requests.approvals:
            path = call.args_as_dict()["path"]
            asked.append((call.tool_name, call.args_as_dict()))
            if path == "/etc/passwd":
                answers[call.tool_call_id] = ToolDenied("not that file")
            elif path == "draft.txt":
                answers[call.tool_call_id] = ToolApproved(override_args={"path": "draft.bak"})
            else:
                answers[call.tool_call_id] = True
        return requests.build_results(approvals=answers)

    deps = Deps()
    agent = Agent(
        scripted(
            "const a = await tools.delete_file({path: 'tmp.txt'});"
            "const b = await tools.delete_file({path: '/etc/passwd'}).catch(e => e.message);"
            "const c = await tools.delete_file({path: 'draft.txt'});"
            "return {a, b, c}"
        ),
        deps_type=Deps,
        toolsets=[CodeModeToolset(inner_tools())],
        capabilities=[HandleDeferredToolCalls(handler)],
    )
    value = value_of(agent.run_sync("go", deps=deps).output)
    assert value["a"] == "deleted tmp.txt"
    assert "not that file" in value["b"]
    assert value["c"] == "deleted draft.bak"
    assert [path["path"] for _, path in asked] == ["tmp.txt", "/etc/passwd", "draft.txt"]
    assert deps.log == [("delete_file", "tmp.txt", True), ("delete_file", "draft.bak", True)]


def test_two_execs_of_one_response_run_concurrently_park_and_resume_apart(store):
    met: dict[str, asyncio.Event] = {}
    tools = inner_tools()

    @tools.tool_plain
    async def meet(me: str, other: str) -> str:
        """Waits until `other` has arrived too."""
        met.setdefault(me, asyncio.Event()).set()
        # Only an Exec running beside this one can set it: run one after the other, both time out.
        await asyncio.wait_for(met.setdefault(other, asyncio.Event()).wait(), timeout=10)
        return f"{me} met {other}"

    deps = Deps()
    scripts = [
        "const m = await tools.meet({me: 'left', other: 'right'}); return [m, await tools.delete_file({path: 'left.txt'})]",
        "const m = await tools.meet({me: 'right', other: 'left'}); return [m, await tools.delete_file({path: 'right.txt'})]",
    ]
    toolset = CodeModeToolset(tools, **store)
    agent = Agent(scripted(scripts), deps_type=Deps, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    first = agent.run_sync("go", deps=deps)
    assert isinstance(first.output, DeferredToolRequests)
    assert sorted(call.tool_call_id for call in first.output.approvals) == ["exec-1-1", "exec-1-2"]
    handles = {id: entry["exec_host"]["handle"] for id, entry in first.output.metadata.items()}
    assert len(set(handles.values())) == 2

    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1-1": True, "exec-1-2": ToolDenied("keep it")}),
        deps=deps,
    )
    left, right = second.output.splitlines()
    assert value_of(left) == ["left met right", "deleted left.txt"]
    assert right == "denied: keep it"
    assert deps.log == [("delete_file", "left.txt", True)]


# --- the capability, and what code mode cannot do ----------------------------------------------


def test_the_code_mode_capability_puts_all_of_an_agents_tools_behind_exec(store):
    seen: list[AgentInfo] = []
    calls: list[str] = []
    agent = Agent(
        scripted("return await tools.shout({text: await tools.greet({name: 'Ada'})})", seen=seen),
        capabilities=[CodeMode(**store)],
    )

    @agent.tool_plain
    def greet(name: str) -> str:
        """Greets someone."""
        calls.append("greet")
        return f"hello {name}"

    @agent.tool_plain(requires_approval=True)
    def shout(text: str) -> str:
        """Shouts (needs approval)."""
        calls.append("shout")
        return text.upper()

    first = agent.run_sync("go", output_type=[str, DeferredToolRequests])
    assert [tool.name for tool in seen[0].function_tools] == ["Exec"]
    assert isinstance(first.output, DeferredToolRequests)
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"exec-1": True}),
        output_type=[str, DeferredToolRequests],
    )
    assert second.output == "success: HELLO ADA"
    assert calls == ["greet", "shout"]


def test_external_tools_stay_beside_exec_and_reserved_names_are_refused():
    seen: list[AgentInfo] = []
    external = ExternalToolset([ToolDefinition(name="ask_human")])
    toolset = CodeModeToolset(CombinedToolset([inner_tools(), external]))
    agent = Agent(scripted("return 1", seen=seen), toolsets=[toolset], deps_type=Deps)
    agent.run_sync("go", deps=Deps())
    assert sorted(tool.name for tool in seen[0].function_tools) == ["Exec", "ask_human"]

    reserved: FunctionToolset[Any] = FunctionToolset()
    reserved.add_function(lambda: 1, name="ToolSearch")
    with pytest.raises(UserError, match="ToolSearch"):
        Agent(scripted("return 1"), toolsets=[CodeModeToolset(reserved)]).run_sync("go")


def test_a_tool_that_asks_only_while_it_runs_fails_in_the_script():
    # `approval_required` decides inside the call; exec-host asks before a call, so this refuses.
    tools = inner_tools().filtered(lambda ctx, tool_def: tool_def.name == "add").approval_required(
        lambda ctx, tool_def, args: args["a"] > 100
    )
    agent = Agent(
        scripted(
            "const ok = await tools.add({a: 1, b: 1});"
            "return [ok, await tools.add({a: 101, b: 1}).catch(e => e.message)]"
        ),
        toolsets=[CodeModeToolset(tools)],
    )
    ok, refused = value_of(agent.run_sync("go").output)
    assert ok == 2
    assert "add must wait (ApprovalRequired)" in refused
