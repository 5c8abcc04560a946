"""Code mode for the OpenAI Agents SDK: the agent's function tools behind one `Exec`
FunctionTool, whose JavaScript calls them inside exec-host's sandbox.

    from agents import Agent, Runner
    from exec_host.openai_agents import CodeMode

    async with await CodeMode.open([get_order, refund]) as code:
        agent = Agent(name="support", tools=[code.tool])      # the model sees only `Exec`
        result = await Runner.run(agent, "Refund order 7")
        while result.interruptions:                          # a script waits for a person
            state = result.to_state()
            for item in result.interruptions:
                for call in await code.pending(item):        # the inner calls it waits on
                    print(call.tool, call.input)
                state.approve(item)                          # or code.decide / deny / reject
            result = await Runner.run(agent, state)

Each inner tool runs as the SDK would run it: its own argument validation, timeout, failure
formatter, `is_enabled` and input and output guardrails, with a `ToolContext` carrying the
run's context. What it returns reaches the script as JSON data; a failure rejects the
script's call with the message the SDK would have shown the model (the tool's failure
formatter's; the exception itself when the tool has none).

Approvals. An inner tool whose `needs_approval` is True (or a callable that says so for a
call) is asked through the SDK's own flow: when the SDK asks whether the Exec call needs
approval, its script runs until every call it has open waits for a person, and parks in
exec-host's state store; the run then stops with ONE interruption, for the Exec call. (So
the script has run by the time the Exec call's own input guardrails and hooks see it.)
Approving it (`state.approve(item)` approves every inner call it waits on; `CodeMode.decide`
and `CodeMode.deny` answer call by call) and running `Runner.run(agent, state)` resumes the
parked script where it stopped: no call it made before is made again. Rejecting it
(`state.reject(item)` or `CodeMode.reject`) discards the parked script. An inner call that
asks after the resume cannot interrupt the run again (the SDK approves a tool call once): it
goes to `approver=` if given, else it is refused with a reason the script reads.
Approving the Exec tool for good (`always_approve=True`) lets later scripts' asking calls run.

The state store. By default the adapter keeps parked scripts in a private temporary folder of
this process, with a key of its own, removed at exit: a RunState serialized with `to_string`
resumes in this process, with a `CodeMode` of the same `conversation`. To resume it in another
process (or after a restart), give `state_store` (a folder or `redis://`), the same
`state_key_file` and the same `conversation` to the `CodeMode` that resumes it. It finds the
parked script by the Exec call's id; what the person decided is kept in the store too, under a
conversation of the adapter's own that no script can read.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import inspect
import json
import logging
import os
import secrets
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Optional, Union

try:
    from agents import FunctionTool, RunContextWrapper, RunState, Tool, ToolApprovalItem
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("exec_host.openai_agents needs the OpenAI Agents SDK: pip install 'exec-host[openai-agents]'") from error
from agents.exceptions import (
    AgentsException,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
    ToolTimeoutError,
)
from agents.tool import (
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
    invoke_function_tool,
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData
from pydantic import BaseModel, TypeAdapter

import exec_host

from . import _adapters

try:
    # The SDK's own reading of a callable `needs_approval`: it asks for approval, without
    # calling the policy, when validation would change the arguments the policy reads (a
    # default filled in, a value coerced), so that a policy cannot be passed by leaving out
    # the argument it checks. Private to the SDK: without it the policy is called directly.
    from agents.util._approvals import evaluate_function_tool_approval as _sdk_policy
except ImportError:  # pragma: no cover - another SDK version
    _sdk_policy = None

__all__ = ["CodeMode", "ToolError"]

logger = logging.getLogger(__name__)

Approver = Callable[[exec_host.ApprovalRequest], Any]
Mode = Literal["park", "resumed", "approved", "callback"]

_ANY = TypeAdapter(Any)


class ToolError(Exception):
    """An inner tool's failure as a script reads it (`ToolError: MESSAGE`): the message the
    SDK would have given the model for it, a guardrail's rejection, or a refusal."""


# --------------------------------------------------------------------------------------------
# What inner tools return, and what the model reads of an Exec
# --------------------------------------------------------------------------------------------


def _script_value(output: Any) -> Any:
    """An SDK tool output as the JSON value the script receives: models and dataclasses
    dumped, text that holds a JSON object or array parsed, other text kept as text."""
    if isinstance(output, ToolOutputText):
        output = output.text
    if isinstance(output, str):
        return _adapters.parsed(output)
    if isinstance(output, (ToolOutputImage, ToolOutputFileContent)):
        return output.model_dump(mode="json", exclude_none=True)
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if isinstance(output, (list, tuple)):
        return [_script_value(part) for part in output]
    try:
        return _ANY.dump_python(output, mode="json")  # dicts, dataclasses, dates...
    except Exception:
        return str(output)  # what the SDK itself would send the model


def _model_output(result: exec_host.ExecResult) -> Any:
    """What the model reads of an Exec: its text, and the images the script attached."""
    if not result.images:
        return result.text
    images = [ToolOutputImage(image_url=f"data:{image.mime_type};base64,{image.base64}") for image in result.images]
    return [ToolOutputText(text=result.text), *images]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _code_of(arguments: str) -> str:
    """The script of an Exec call's JSON arguments ("" when there is none, which exec-host
    refuses saying so)."""
    try:
        code = json.loads(arguments or "{}").get("code", "")
    except (ValueError, AttributeError):
        return ""
    return code if isinstance(code, str) else ""


# --------------------------------------------------------------------------------------------
# Runs in flight, and parked Execs
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Run:
    """An Exec being driven now, found by its id (the SDK's call id) from its inner calls
    (`exec_host.current_call().exec_id`) and its approval requests. `mode` says how a call
    that asks is answered: "park" while the SDK asks whether the Exec needs approval,
    "resumed" after the person answered, "approved" when the SDK approved the Exec call
    before it ran, "callback" otherwise (no interruptions)."""

    mode: Mode
    context: RunContextWrapper[Any]
    agent: Any = None
    run_config: Any = None
    tripwire: Optional[AgentsException] = None


@dataclasses.dataclass
class _Outcome:
    """An Exec that ran to its end while the SDK asked whether it needs approval: handed to
    the SDK when it invokes that call (the script as it was, to tell a reused call id)."""

    code: str
    result: Union[exec_host.ExecResult, Exception]


class _Decisions:
    """What the person decided for each Exec call they answered call by call (`CodeMode.decide`):
    the keywords of `Session.resume`. Kept in memory and in the state store, under a
    conversation of the adapter's own (derived from the session's), so that a `CodeMode` in
    another process resuming a serialized RunState finds them, and no script can read or
    change them (a script reaches its own conversation's values only)."""

    def __init__(self, store: dict[str, Any], conversation: str) -> None:
        self._memory: dict[str, dict[str, Any]] = {}
        self._store = store
        digest = hashlib.sha256(conversation.encode()).hexdigest()[:40]
        self._conversation = f"exec-host.openai-agents.{digest}"
        self._session: Optional[exec_host.Session] = None

    async def get(self, call_id: str) -> Optional[dict[str, Any]]:
        decision = self._memory.get(call_id)
        if decision is None:
            value = await self._run(f"return load({self._key(call_id)})")
            if value is not None:
                deny = {int(id): str(reason) for id, reason in value["deny"].items()}
                decision = self._memory[call_id] = {"approve": value["approve"], "always": value["always"], "deny": deny}
        return decision

    async def put(self, call_id: str, decision: dict[str, Any]) -> None:
        self._memory[call_id] = decision
        # JSON keys are strings: the deny map's ids are read back as numbers.
        await self._write(call_id, json.dumps({**decision, "deny": {str(id): why for id, why in decision["deny"].items()}}))

    async def drop(self, call_id: str) -> None:
        self._memory.pop(call_id, None)
        await self._write(call_id, "undefined")

    async def _write(self, call_id: str, value: str) -> None:
        # A record the store did not take still serves this process: say so, and go on.
        try:
            await self._run(f"store({self._key(call_id)}, {value})")
        except Exception as error:
            logger.warning("exec-host: the decision on Exec call %s was not kept in the state store: %s", call_id, error)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    @staticmethod
    def _key(call_id: str) -> str:
        # Keys are at most 256 bytes; call ids are short, but nothing promises it.
        key = f"exec/{call_id}" if len(call_id.encode()) <= 200 else "exec/sha256:" + hashlib.sha256(call_id.encode()).hexdigest()
        return json.dumps(key)

    async def _run(self, code: str) -> Any:
        """Runs a one-line script in the adapter's own conversation of the store."""
        if self._session is None:
            session = await exec_host.Session.open(conversation=self._conversation, bash=False, **self._store)
            if self._session is None:
                self._session = session
            else:  # another task opened it meanwhile
                await session.close()
        result = await self._session.exec(code)
        if not result.ok:
            raise exec_host.SessionError(f"the adapter could not read or write its record in the state store: {result.text}")
        return result.value


# --------------------------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------------------------


class CodeMode:
    """One exec-host session behind an `Exec` FunctionTool (`tool`) whose scripts call the
    function tools it was opened with. Open it with `await CodeMode.open(tools)`; close it
    with `await code.close()` or `async with`. One CodeMode may serve several agents, runs and
    concurrent Exec calls. See the module's documentation for approvals and the state store."""

    tool: FunctionTool
    """The `Exec` tool to give the agent in place of the tools it was opened with."""

    def __init__(self) -> None:
        """Use `await CodeMode.open(...)`."""
        self._session: Optional[exec_host.Session] = None
        self._inner: dict[str, FunctionTool] = {}
        self._approver: Optional[Approver] = None
        self._interrupt = True
        self._runs: dict[str, _Run] = {}
        self._outcomes: dict[str, _Outcome] = {}
        self._agents: dict[int, tuple[weakref.ref[Any], Any]] = {}
        self._decisions: _Decisions

    @classmethod
    async def open(
        cls,
        tools: Iterable[Tool],
        *,
        name: str = "Exec",
        interrupt: bool = True,
        approver: Optional[Approver] = None,
        state_store: Optional[Union[str, "os.PathLike[str]"]] = None,
        state_key_file: Optional[Union[str, "os.PathLike[str]"]] = None,
        conversation: Optional[str] = None,
        **session_options: Any,
    ) -> "CodeMode":
        """Opens the session and builds `tool`.

        - `tools`: the FunctionTools scripts may call (an agent's `tools`; `await
          agent.get_all_tools(context)` adds its MCP servers' tools). Tools that are not
          FunctionTools (hosted ones) cannot be called from a script: keep them beside
          `tool` on the agent. A tool whose `is_enabled` is False is left out.
        - `name`: the Exec tool's name.
        - `interrupt`: True (the default) asks for inner approvals through the SDK's
          interruptions; False never interrupts: `approver` answers while the script waits.
        - `approver`: called (sync or async) with an `exec_host.ApprovalRequest` for an inner
          call that asks when no interruption can: with `interrupt=False`, or after a resume.
          It answers "once", "always", "deny" or ("deny", REASON). Without one, such calls
          are refused, saying why.
        - `state_store`, `state_key_file`, `conversation`: where parked scripts are kept (see
          the module's documentation); by default this process's private temporary folder and
          key, and a new conversation (`code.conversation`).
        - Any other keyword goes to `exec_host.Session.open` (`workspace`, `mcp_servers`,
          `settings`, `permission_mode`, `allow`, `deny`, `ask`, `limits`, ...). Inner tools
          with `needs_approval=False` are allowed by a rule added to `allow`; the others ask.

        Raises TypeError for a tool that is not a FunctionTool and ValueError for two tools
        of one name; `exec_host.SessionError` when the session cannot start."""
        for taken in ("tools", "approver"):
            if taken in session_options:
                raise TypeError(f"CodeMode.open sets `{taken}` of the session itself")
        self = cls()
        self._approver, self._interrupt = approver, interrupt
        for tool in tools:
            if not isinstance(tool, FunctionTool):
                raise TypeError(f"{tool!r} is not a FunctionTool: a script cannot call it (keep it beside the Exec tool)")
            if tool.name in self._inner or tool.name == name:
                raise ValueError(f"two tools are named {tool.name!r}")
            if tool.is_enabled is not False:
                self._inner[tool.name] = tool

        if state_store is None:
            state_store, state_key_file = _adapters.private_store()
        allow = [*session_options.pop("allow", ()), *(t.name for t in self._inner.values() if t.needs_approval is False)]
        self._session = await exec_host.Session.open(
            tools=[self._bridge(tool) for tool in self._inner.values()],
            approver=self._answer,
            allow=allow,
            state_store=state_store,
            state_key_file=state_key_file,
            conversation=conversation,
            **session_options,
        )
        store = {"state_store": state_store, "state_key_file": state_key_file}
        self._decisions = _Decisions(store, self.session.conversation or "")

        declaration = self.session.declaration()
        self.tool = FunctionTool(
            name=name,
            description=declaration["description"],
            params_json_schema=declaration["input_schema"],
            on_invoke_tool=self._invoke,
            # exec-host's schema is not written for OpenAI's strict mode, and needs no more.
            strict_json_schema=False,
            is_enabled=self._each_turn,
            needs_approval=self._needs_approval if interrupt else False,
        )
        return self

    @property
    def session(self) -> exec_host.Session:
        """The exec-host session the scripts run in; `exec_host.SessionError` once closed."""
        if self._session is None:
            raise exec_host.SessionError("the CodeMode is closed")
        return self._session

    @property
    def conversation(self) -> str:
        """The conversation parked scripts belong to: keep it with a serialized RunState to
        resume it in another process (with the same state store and key)."""
        return self.session.conversation or ""

    # -- inner tools -------------------------------------------------------------------------

    def _bridge(self, tool: FunctionTool) -> Callable[..., Any]:
        """The function exec-host calls for `tool`, described by its name, description and
        schemas."""
        runnable = copy.copy(tool)
        # The copy raises its failures and timeouts, so that the script's call rejects with
        # the message the original would have returned to the model (see `_failure`).
        set_function_tool_failure_error_function(runnable, None)
        runnable.timeout_behavior = "raise_exception"

        async def call(**arguments: Any) -> Any:
            return await self._call(tool, runnable, arguments)

        return exec_host.tool(
            call,
            name=tool.name,
            description=tool.description or tool.name,
            schema=tool.params_json_schema,
            output_schema=tool.output_json_schema,
        )

    async def _call(self, tool: FunctionTool, runnable: FunctionTool, arguments: dict[str, Any]) -> Any:
        """One inner call, as the SDK runs a tool call: enabled, input guardrails, the call,
        output guardrails; in the context of the Exec that made it."""
        about = exec_host.current_call()
        exec_id = about.exec_id if about is not None else None
        run = self._runs.get(exec_id) if exec_id is not None else None
        if run is not None and run.tripwire is not None:
            raise ToolError("a guardrail halted this run: no tool runs any more")
        text = json.dumps(arguments)
        # The inner call's id: the Exec call's id and the call's place in its script.
        if exec_id is not None:
            call_id = f"{exec_id}/{about.call}"  # type: ignore[union-attr]
        else:  # a call made straight through the session, not by a script
            call_id = (about.call_id if about is not None else None) or f"call/{secrets.token_hex(8)}"
        context = ToolContext.from_agent_context(
            run.context if run is not None else RunContextWrapper(context=None),
            call_id,
            tool_name=tool.name,
            tool_arguments=text,
            agent=run.agent if run is not None else None,
            run_config=run.run_config if run is not None else None,
        )
        agent = context.agent
        enabled = tool.is_enabled if isinstance(tool.is_enabled, bool) else await _maybe_await(tool.is_enabled(context, agent))
        if not enabled:
            raise ToolError(f"`{tool.name}` is not enabled now")
        for guardrail in tool.tool_input_guardrails or ():
            verdict = await guardrail.run(ToolInputGuardrailData(context=context, agent=agent))
            self._judge(run, verdict, ToolInputGuardrailTripwireTriggered(guardrail=guardrail, output=verdict))
        try:
            output = await invoke_function_tool(function_tool=runnable, context=context, arguments=text)
        except Exception as error:
            failure = await self._failure(tool, context, error)
            if failure is error:
                raise
            raise failure from error
        for guardrail in tool.tool_output_guardrails or ():
            verdict = await guardrail.run(ToolOutputGuardrailData(context=context, agent=agent, output=output))
            self._judge(run, verdict, ToolOutputGuardrailTripwireTriggered(guardrail=guardrail, output=verdict))
        return _script_value(output)

    @staticmethod
    def _judge(run: Optional[_Run], verdict: Any, tripwire: AgentsException) -> None:
        """A guardrail's verdict: "reject_content" rejects the script's call with its message;
        "raise_exception" also halts the run, as the SDK would (raised when the Exec ends)."""
        behavior = verdict.behavior
        if behavior["type"] == "reject_content":
            raise ToolError(behavior["message"])
        if behavior["type"] == "raise_exception":
            if run is not None and run.tripwire is None:
                run.tripwire = tripwire
            raise ToolError(f"{type(tripwire).__name__}: the guardrail halted the run")

    @staticmethod
    async def _failure(tool: FunctionTool, context: ToolContext[Any], error: Exception) -> Exception:
        """What the script's call rejects with: the message the SDK would have returned to the
        model (the tool's timeout or failure formatter), or the exception itself when the SDK
        would have raised it."""
        if isinstance(error, ToolTimeoutError):
            if tool.timeout_behavior == "error_as_result" and tool.timeout_error_function is not None:
                return ToolError(str(await _maybe_await(tool.timeout_error_function(context, error))))
            return ToolError(str(error))
        formatter = resolve_function_tool_failure_error_function(tool, context)
        if formatter is None:
            return error
        return ToolError(str(await _maybe_await(formatter(context, error))))

    # -- approvals ---------------------------------------------------------------------------

    async def _answer(self, request: exec_host.ApprovalRequest) -> Any:
        """exec-host's approver, for inner calls that ask: a callable policy that does not ask
        runs the call; otherwise the Exec parks while the SDK asks whether it needs approval,
        runs it when the SDK approved the Exec call before it ran, and asks `approver` (or
        refuses) anywhere else."""
        run = self._runs.get(request.exec_id) if request.exec_id is not None else None
        if run is not None and run.tripwire is not None:
            return ("deny", "a guardrail halted this run")
        tool = self._inner.get(request.tool)
        if tool is not None and callable(tool.needs_approval):
            context = run.context if run is not None else RunContextWrapper(context=None)
            if not await self._policy_asks(tool, context, request.input, f"{request.exec_id}/{request.call}"):
                return "once"
        mode: Mode = run.mode if run is not None else "callback"
        if mode == "park":
            return "park"
        if mode == "approved":
            return "once"
        if self._approver is not None:
            answer = await _adapters.ask(self._approver, request)
            # Nothing can take up a park from here: it would hold the Exec for nobody.
            return ("deny", "this call cannot wait for approval here") if answer == "park" else answer
        if mode == "resumed":
            return (
                "deny",
                f"`{request.tool}` needs approval, and this Exec cannot ask again: its approval "
                "covered the calls it waited on. Call it from a new Exec to ask.",
            )
        return ("deny", f"`{request.tool}` needs approval, and nothing here can give it")

    @staticmethod
    async def _policy_asks(tool: FunctionTool, context: RunContextWrapper[Any], arguments: Any, call_id: str) -> bool:
        """Whether `tool`'s callable `needs_approval` asks for this call. A policy that fails
        asks, as the SDK does."""
        arguments = arguments if isinstance(arguments, dict) else {}
        try:
            if _sdk_policy is not None:
                verdict = await _sdk_policy(tool, context, json.dumps(arguments), call_id)
                return verdict.outcome != "invoke"
            return bool(await _maybe_await(tool.needs_approval(context, arguments, call_id)))  # type: ignore[operator]
        except Exception:
            return True

    async def _needs_approval(self, context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        """The Exec tool's `needs_approval`: runs the script now, until it ends (no approval
        needed; its result waits for the SDK's invocation) or parks (approval needed)."""
        if call_id in self._outcomes:
            return False
        if await _adapters.parked(self.session, call_id) is not None:
            return True  # parked already: still waiting for the person
        code = params.get("code")
        code = code if isinstance(code, str) else ""
        outcome: Union[exec_host.ExecResult, Exception]
        try:
            start = lambda: self.session.exec(code, id=call_id)  # noqa: E731
            outcome = await self._drive(call_id, "park", context, self._agent_of(context), None, start)
        except Exception as error:  # reported when the SDK invokes the call
            outcome = error
        if isinstance(outcome, exec_host.ExecResult) and outcome.paused is not None:
            return True
        self._outcomes[call_id] = _Outcome(code, outcome)
        return False

    def _explained(self, approval: exec_host.PendingApproval) -> exec_host.PendingApproval:
        """A waiting call, saying why in the SDK's terms when the tool's `needs_approval` is
        why it asks (exec-host's reason, the permission mode's, says less to a person)."""
        tool = self._inner.get(approval.tool)
        if tool is None or tool.needs_approval is False:
            return approval
        why = "its needs_approval is True" if tool.needs_approval is True else "its needs_approval policy asks for this call"
        return dataclasses.replace(approval, why=why)

    async def _each_turn(self, context: RunContextWrapper[Any], agent: Any) -> bool:
        """The Exec tool's `is_enabled`, which the SDK asks at every turn with the run's
        context and agent: remembers the agent (for inner calls made while the SDK asks about
        approval, where it is not given), and discards the parked Execs whose call the person
        rejected, in this process or another (a plain `state.reject(item)` reaches the adapter
        nowhere else)."""
        self._agents = {key: entry for key, entry in self._agents.items() if entry[0]() is not None}
        self._agents[id(context)] = (weakref.ref(context), agent)
        rejected = [paused for paused in await self.session.parked_execs() if self._rejected(context, paused.exec_id)]
        for paused in rejected:
            await self._discard(paused)
        return True

    def _rejected(self, context: RunContextWrapper[Any], call_id: Optional[str]) -> bool:
        try:
            return call_id is not None and context.is_tool_approved(self.tool.name, call_id) is False
        except Exception:  # an id the SDK cannot read as one of its calls
            return False

    def _agent_of(self, context: RunContextWrapper[Any]) -> Any:
        entry = self._agents.get(id(context))
        return entry[1] if entry is not None and entry[0]() is context else None

    # -- running -----------------------------------------------------------------------------

    async def _drive(
        self,
        call_id: str,
        mode: Mode,
        context: RunContextWrapper[Any],
        agent: Any,
        run_config: Any,
        start: Callable[[], Awaitable[exec_host.ExecResult]],
    ) -> exec_host.ExecResult:
        """Runs an Exec (or its resume) with its inner calls' context registered under its id,
        which exec-host gives back to them: concurrent Execs need no lock."""
        run = _Run(mode, context, agent, run_config)
        self._runs[call_id] = run
        try:
            result = await start()
        finally:
            if self._runs.get(call_id) is run:
                del self._runs[call_id]
        if run.tripwire is not None:
            raise run.tripwire
        return result

    async def _invoke(self, context: ToolContext[Any], arguments: str) -> Any:
        """The Exec tool's invocation: the outcome of the run made while the SDK asked about
        approval, the resume of the parked Exec the person answered, or a run now."""
        call_id = context.tool_call_id
        code = _code_of(arguments)
        outcome = self._outcomes.pop(call_id, None)
        result: Union[exec_host.ExecResult, Exception]
        if outcome is not None and outcome.code == code:
            result = outcome.result
        else:
            try:
                parked = await _adapters.parked(self.session, call_id)
                if parked is not None:
                    result = await self._resume(call_id, parked, context)
                else:
                    # Run without asking the person only because the SDK says they approved
                    # this call already (the Exec tool approved for good, say).
                    approved = self._interrupt and context.is_tool_approved(self.tool.name, call_id) is True
                    mode: Mode = "approved" if approved else "callback"
                    start = lambda: self.session.exec(code, id=call_id)  # noqa: E731
                    result = await self._drive(call_id, mode, context, context.agent, context.run_config, start)
            except AgentsException:
                raise
            except Exception as error:
                result = error
        if isinstance(result, AgentsException):
            raise result  # a guardrail's tripwire halts the run, as the SDK would
        if isinstance(result, Exception):
            return f"The Exec could not run: {type(result).__name__}: {result}"
        if result.paused is not None:  # nothing answers "park" here; never leave one behind
            await self.session.discard(result.paused.handle)
            return "The Exec stopped: a call waited for an approval nothing here can give."
        return _model_output(result)

    async def _resume(self, call_id: str, parked: exec_host.Paused, context: ToolContext[Any]) -> exec_host.ExecResult:
        """Resumes the parked Exec of an approved call with the person's answers (all its
        calls approved when they gave none)."""
        decision = await self._decisions.get(call_id)
        try:
            start = lambda: self.session.resume(parked.handle, **(decision or {"approve": "all"}))  # noqa: E731
            return await self._drive(call_id, "resumed", context, context.agent, context.run_config, start)
        finally:
            if decision is not None:
                await self._decisions.drop(call_id)

    async def _discard(self, parked: exec_host.Paused) -> None:
        """Drops a parked Exec (none of its waiting calls runs) and what was decided for it."""
        if parked.exec_id is not None:
            await self._decisions.drop(parked.exec_id)
        try:
            await self.session.discard(parked.handle)
        except exec_host.ResumeError:
            pass  # taken or expired already

    async def _parked(self, item: ToolApprovalItem) -> Optional[exec_host.Paused]:
        """The parked Exec an interruption of this CodeMode's Exec tool waits in."""
        call_id = self._call_id(item)
        return await _adapters.parked(self.session, call_id) if call_id is not None else None

    # -- the person's answers ----------------------------------------------------------------

    def _call_id(self, item: ToolApprovalItem) -> Optional[str]:
        """The call id of an interruption for this CodeMode's Exec tool; None for another's."""
        if item.name != self.tool.name:
            return None
        call_id = item.call_id
        return call_id if isinstance(call_id, str) else None

    async def pending(self, item: ToolApprovalItem) -> list[exec_host.PendingApproval]:
        """The inner calls an interrupted Exec call waits on (`id`, `tool`, `input`, `why`);
        empty for an interruption of another tool, and for an Exec call whose arguments the
        SDK could not read (approving it runs it, and the model reads why it failed)."""
        parked = await self._parked(item)
        return [self._explained(approval) for approval in parked.approvals] if parked is not None else []

    async def decide(
        self,
        state: RunState[Any, Any],
        item: ToolApprovalItem,
        *,
        approve: Union[Iterable[int], Literal["all"]] = "all",
        always: Iterable[int] = (),
        deny: Optional[Mapping[int, str]] = None,
    ) -> None:
        """Answers the inner calls an interrupted Exec call waits on, by their `id`s (see
        `pending`), then approves the Exec call in `state`, so that the next
        `Runner.run(agent, state)` resumes its script. `approve`: "all" or ids to run once;
        `always`: ids to run and allow from then on (exec-host's "always"); `deny`: {id:
        reason} to refuse (the script's call rejects with the reason, and it goes on). Ids not
        named are denied. Kept in the state store, so the run may resume in another process.

        Raises ValueError for an interruption of another tool, or an id it does not wait on."""
        call_id = self._call_id(item)
        if call_id is None:
            raise ValueError(f"{item.name!r} is not this CodeMode's {self.tool.name} tool")
        parked = await self._parked(item)
        if parked is not None:
            ids = [approval.id for approval in parked.approvals]
            denied = {int(id): str(reason) for id, reason in (deny or {}).items()}
            lasting = {int(id) for id in always}
            once = set(ids) if approve == "all" else {int(id) for id in approve}
            unknown = sorted((denied.keys() | lasting | once) - set(ids))
            if unknown:
                raise ValueError(f"the Exec waits on calls {ids}, not {unknown}")
            answers: dict[str, Any] = {"approve": [], "always": [], "deny": {}}
            for id in ids:
                if id in denied:
                    answers["deny"][id] = denied[id]
                elif id in lasting:
                    answers["always"].append(id)
                elif id in once:
                    answers["approve"].append(id)
                else:
                    answers["deny"][id] = "not approved"
            await self._decisions.put(call_id, answers)
        state.approve(item)

    async def deny(self, state: RunState[Any, Any], item: ToolApprovalItem, reason: str = "denied by the user") -> None:
        """Refuses every inner call an interrupted Exec call waits on, with `reason`, and lets
        its script go on (it reads the refusal): the model reads what the script made of it.
        (`reject` instead drops the script: the model reads the SDK's rejection message.)"""
        await self.decide(state, item, approve=[], deny={approval.id: reason for approval in await self.pending(item)})

    async def reject(self, state: RunState[Any, Any], item: ToolApprovalItem, message: Optional[str] = None) -> None:
        """Rejects an interrupted Exec call in `state` (the model reads `message`, or the SDK's
        rejection message) and discards its parked script at once: none of the calls it waits
        on runs. A plain `state.reject(item)` discards it too, at the next turn of the run that
        state goes on with, in any process (else the store lets it expire)."""
        state.reject(item, rejection_message=message)
        parked = await self._parked(item)
        if parked is not None:
            await self._discard(parked)

    # -- closing -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Closes the session; closing again does nothing. Parked Execs stay in the store for
        a CodeMode that resumes them (in the private store, until this process exits)."""
        # Letting go of the session breaks the cycle through its tools, which call this object.
        session, self._session = self._session, None
        await self._decisions.close()
        if session is not None:
            await session.close()

    async def __aenter__(self) -> "CodeMode":
        """Returns this CodeMode, which closes when the block ends."""
        return self

    async def __aexit__(self, *_: Any) -> None:
        """Closes this CodeMode."""
        await self.close()
