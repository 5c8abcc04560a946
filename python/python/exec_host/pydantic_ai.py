"""Code mode for pydantic-ai agents: the model gets one tool, `Exec`, whose JavaScript scripts
call the agent's other tools (`await tools.NAME({...})`) in exec-host's WebAssembly sandbox.

    from pydantic_ai import Agent
    from pydantic_ai.tools import DeferredToolRequests
    from pydantic_ai.toolsets import FunctionToolset
    from exec_host.pydantic_ai import CodeModeToolset

    tools = FunctionToolset([get_weather, send_email])   # send_email: requires_approval=True
    agent = Agent("openai:gpt-5", toolsets=[CodeModeToolset(tools)],
                  output_type=[str, DeferredToolRequests])

Every call a script makes goes through a `ToolManager` of the wrapped toolset, as a call the
model made itself would: argument validation, the agent's capability hooks, the tool's own
`RunContext` (deps included). A tool that raises rejects the script's `await` with its error.

Approvals: a tool declared `requires_approval=True` asks before it runs. The agent's
`HandleDeferredToolCalls` capability, when it has one, answers in place; otherwise the script
parks (exec-host keeps it in its state store) and `Exec` asks for approval itself, so the run
ends with a `DeferredToolRequests` whose `metadata[exec_call_id]["exec_host"]` says what the
script waits for. Approve the Exec call in the next run's `DeferredToolResults` and the script
continues where it stopped: the calls it made before are not made again. Without a
`state_store`, scripts park in a private folder of this process; give one to resume in another.

`CodeMode` is the same as a capability that wraps all of an agent's tools.

Install with `pip install 'exec-host[pydantic-ai]'`.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import copy
import dataclasses
import json
import os
import uuid
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar, Union

try:
    from pydantic import TypeAdapter
    from pydantic_ai import RunContext, ToolDefinition, WrapperToolset
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ToolFailed, UserError
    from pydantic_ai.messages import BinaryContent, ToolCallPart, ToolReturn, ToolReturnPart
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.tools import AgentDepsT, DeferredToolRequests, ToolApproved, ToolDenied
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import SchemaValidatorProt, ToolsetTool
    from pydantic_core import to_jsonable_python
    from typing_extensions import TypedDict
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("exec_host.pydantic_ai needs pydantic-ai: pip install 'exec-host[pydantic-ai]'") from error

import exec_host

from . import _adapters, _tools

__all__ = ["CodeMode", "CodeModeToolset", "METADATA_KEY"]

#: The key of the Exec's entry in `DeferredToolRequests.metadata[call_id]` (and of the answers
#: given back in `DeferredToolResults.metadata[call_id]`), and of its `ToolReturnPart.metadata`.
METADATA_KEY = "exec_host"

# Names the sandbox keeps for itself: a tool of the wrapped toolset may not take them.
_RESERVED = frozenset({"Exec", "ToolSearch"})

PathLike = Union[str, "os.PathLike[str]"]
_T = TypeVar("_T")


class _ExecArgs(TypedDict):
    code: str


_EXEC_VALIDATOR: SchemaValidatorProt = TypeAdapter(_ExecArgs).validator  # type: ignore[assignment]


@dataclass(kw_only=True)
class _ExecTool(ToolsetTool[AgentDepsT]):
    """The `Exec` tool, with the wrapped tools of the step that listed it (its scripts call
    those, whatever a later step lists)."""

    wrapped_tools: dict[str, ToolsetTool[AgentDepsT]]


@dataclass
class _ExecCall:
    """One running Exec: what its tool calls and approvals need, found by its id."""

    ctx: RunContext[Any]
    tool_manager: ToolManager[Any]
    context: contextvars.Context
    """The context the Exec tool was called in (the run's tracing span, usage, ...): exec-host
    runs a tool in a task of its own, which starts from an empty one."""
    overrides: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Arguments a `HandleDeferredToolCalls` approval replaced, by the call's place in the script."""


@dataclass
class _RunState:
    """One run's exec-host session and its running Execs."""

    session: Optional[exec_host.Session] = None
    tools_key: Optional[str] = None
    execs: dict[str, _ExecCall] = field(default_factory=dict)
    denied_seen: set[str] = field(default_factory=set)
    """The denied Exec calls whose parked scripts this run has discarded."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class _Answers:
    """What `DeferredToolResults.metadata[exec_call_id]` says about a parked Exec."""

    handle: Optional[str] = None
    approve: Union[list[int], str] = "all"
    always: list[int] = field(default_factory=list)
    deny: dict[int, str] = field(default_factory=dict)

    @classmethod
    def read(cls, metadata: Any) -> "_Answers":
        entry = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
        if not isinstance(entry, Mapping):
            return cls()
        answers = cls(handle=entry.get("handle"))
        if "approve" in entry:
            approve = entry["approve"]
            answers.approve = "all" if approve == "all" else [int(id) for id in approve]
        answers.always = [int(id) for id in entry.get("always") or ()]
        deny = entry.get("deny") or {}
        if isinstance(deny, Mapping):
            answers.deny = {int(id): str(reason) for id, reason in deny.items()}
        else:
            answers.deny = {int(id): "The user denied this call." for id in deny}
        return answers


@dataclass(kw_only=True)
class CodeModeToolset(WrapperToolset[AgentDepsT]):
    """Offers the model one tool, `Exec`, whose scripts call the tools of `wrapped`.

    - `state_store`: a folder or `redis://HOST:PORT/DB` where scripts that wait for approval
      park. None (the default): a private temporary folder of this process, removed at exit, so
      a parked script resumes only in this process. Give a store (and the same
      `state_key_file`) to every process that may resume one.
    - `state_key_file`: the file holding the key that seals the store (64 hex characters, mode
      0600); None: this machine's exec-host key (made when missing), or the temporary store's own.
    - `permission_mode`: exec-host's mode (`"default"`, `"acceptEdits"`, `"plan"`, `"dontAsk"`,
      `"bypassPermissions"`). The wrapped tools are allowed, those with `requires_approval=True`
      always ask.
    - `settings`: an exec-host settings layer (`{"permissions": {"deny": [...], "ask": [...]}}`,
      ...), under the rules this toolset adds. A call an `ask` rule of yours catches is asked
      about like a `requires_approval` tool.
    - `limits`: what one script may take (`exec_host.Limits`).
    - `max_retries`: how often the model may send `Exec` arguments that fail validation.
    - `id`: the toolset's id (durable execution names it by this); give each code-mode toolset
      of an agent its own.

    `Exec`'s description names the tools a script can call (exec-host's catalogue; a script
    finds their parameters with `tools.ToolSearch`). Tools of kind `external` cannot run in a
    script and are offered to the model directly, beside `Exec`.

    A failed script is a failed tool result (`ToolFailed`): the model reads what went wrong.
    A script that parked makes `Exec` raise `ApprovalRequired` with metadata
    `{"exec_host": {"handle": ..., "approvals": [{"id", "tool", "input", "why"}, ...]}}`. To
    continue it, approve the Exec call in `DeferredToolResults.approvals`: every call it waits
    for runs, unless `DeferredToolResults.metadata[call_id]` answers them one by one with
    `{"exec_host": {"approve": [ids], "always": [ids], "deny": {id: reason} or [ids]}}` (a call
    left out of an `approve` list parks again; `always` lets that tool run unasked for the rest
    of the run). Any process with the same store and key finds the script by the Exec call's id,
    so the `handle` need not be passed back. Denying the Exec call (`ToolDenied`, `False`) drops
    the parked script: none of its waiting calls run. A parked script never answered expires
    after 24 hours (exec-host's default)."""

    state_store: Optional[PathLike] = None
    state_key_file: Optional[PathLike] = None
    permission_mode: str = "default"
    settings: Optional[Mapping[str, Any]] = None
    limits: Optional[exec_host.Limits] = None
    max_retries: int = 1
    id: Optional[str] = "exec_host"  # type: ignore[assignment]  # a field here, a property above

    _run: Optional[_RunState] = field(default=None, init=False, repr=False, compare=False)

    # --- copies and lifecycle -----------------------------------------------------------------

    def _copy(self, wrapped: AbstractToolset[AgentDepsT], run: Optional[_RunState]) -> "CodeModeToolset[AgentDepsT]":
        """This toolset over `wrapped`, with the run state `run` (`replace` would drop it)."""
        copied = dataclasses.replace(self, wrapped=wrapped)
        copied._run = run
        return copied

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """A copy for one run, with its own exec-host session (runs may overlap)."""
        return self._copy(await self.wrapped.for_run(ctx), _RunState())

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """The run's toolset for this step: the same session, over the step's wrapped toolset."""
        wrapped = await self.wrapped.for_run_step(ctx)
        return self if wrapped is self.wrapped else self._copy(wrapped, self._run)

    def visit_and_replace(self, visitor: Any) -> AbstractToolset[AgentDepsT]:
        """See `AbstractToolset.visit_and_replace`."""
        return self._copy(self.wrapped.visit_and_replace(visitor), self._run)

    async def __aenter__(self) -> "CodeModeToolset[AgentDepsT]":
        """Enters the wrapped toolset; the session opens when the tools are first listed."""
        await self.wrapped.__aenter__()
        if self._run is None:
            self._run = _RunState()
        return self

    async def __aexit__(self, *args: Any) -> Optional[bool]:
        """Exits the wrapped toolset and closes the run's session (parked scripts stay parked)."""
        run, self._run = self._run, None
        try:
            return await self.wrapped.__aexit__(*args)
        finally:
            if run is not None and run.session is not None:
                await run.session.close()

    # --- what the model sees ------------------------------------------------------------------

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """`Exec`, and the wrapped toolset's external tools (a script cannot wait for those)."""
        wrapped_tools = await self.wrapped.get_tools(ctx)
        session = await self._session(ctx, wrapped_tools)
        declaration = session.declaration()
        await self._drop_denied(ctx, session, declaration["name"])
        tools: dict[str, ToolsetTool[AgentDepsT]] = {
            name: tool for name, tool in wrapped_tools.items() if tool.tool_def.kind == "external"
        }
        tools[declaration["name"]] = _ExecTool(
            toolset=self,
            tool_def=ToolDefinition(
                name=declaration["name"],
                description=declaration["description"],
                parameters_json_schema=declaration["input_schema"],
                # Read by pydantic-ai's instrumentation: the argument is code, in this language.
                metadata={"code_arg_name": "code", "code_arg_language": "javascript"},
            ),
            max_retries=self.max_retries,
            args_validator=_EXEC_VALIDATOR,
            wrapped_tools={
                name: _callable(tool) for name, tool in wrapped_tools.items() if tool.tool_def.kind != "external"
            },
        )
        return tools

    # --- running a script ---------------------------------------------------------------------

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Runs the script of an `Exec` call (or continues it, once approved), or passes a call
        of an external tool on to the wrapped toolset."""
        if not isinstance(tool, _ExecTool):
            return await super().call_tool(name, tool_args, ctx, tool)
        run = self._entered()
        assert run.session is not None, "get_tools opened the session"
        session = run.session
        exec_id = ctx.tool_call_id or f"exec-{uuid.uuid4().hex}"
        if exec_id in run.execs:
            raise UserError(f"Two Exec calls share the id {exec_id!r}: each needs its own.")
        parent = ctx.tool_manager
        # The script's calls take the same path as the model's: validation, hooks, approval.
        tool_manager = ToolManager(
            toolset=self.wrapped,
            root_capability=parent.root_capability if parent is not None else None,
            ctx=ctx,
            tools=tool.wrapped_tools,
            default_max_retries=parent.default_max_retries if parent is not None else 1,
        )
        run.execs[exec_id] = _ExecCall(ctx=ctx, tool_manager=tool_manager, context=contextvars.copy_context())
        try:
            result = await self._run_or_resume(session, ctx, exec_id, tool_args["code"])
        finally:
            del run.execs[exec_id]

        if result.paused is not None:
            approvals = [dataclasses.asdict(approval) for approval in result.paused.approvals]
            raise ApprovalRequired(metadata={METADATA_KEY: {"handle": result.paused.handle, "approvals": approvals}})
        if not result.ok:
            # The model should read what went wrong and adapt; this spends no retry.
            raise ToolFailed(result.text)
        value: Any = result.text
        if result.images:
            value = [result.text, *(_image(image) for image in result.images)]
        # Kept in the history for the application; the model reads only the text.
        kept = {"value": result.value, "logs": result.logs, "calls": result.calls, "summary": result.summary}
        return ToolReturn(return_value=value, metadata={METADATA_KEY: kept})

    async def _run_or_resume(
        self, session: exec_host.Session, ctx: RunContext[Any], exec_id: str, code: str
    ) -> exec_host.ExecResult:
        """The Exec's result: a new run of `code`, or the parked script continued when this
        call was approved."""
        if not ctx.tool_call_approved:
            return await session.exec(code, id=exec_id)
        answers = _Answers.read(ctx.tool_call_metadata)
        handle = answers.handle
        if handle is None:
            parked = await _adapters.parked(session, exec_id)
            if parked is None:
                # Approved without having parked: something around this toolset asked first.
                return await session.exec(code, id=exec_id)
            handle = parked.handle
        try:
            return await session.resume(handle, approve=answers.approve, always=answers.always, deny=answers.deny)
        except exec_host.ResumeError as error:
            raise ToolFailed(f"The script waiting for approval could not continue: {error}") from error

    def _bridge(self, tool_def: ToolDefinition) -> Any:
        """An exec-host tool that runs the wrapped tool `tool_def.name` for the Exec calling it."""
        name = tool_def.name
        # exec-host asks about such a tool before it calls the bridge (an `ask` rule), so a call
        # that gets here was approved.
        approved = tool_def.kind == "unapproved"

        async def call(**arguments: Any) -> Any:
            info = exec_host.current_call()
            if info is None or info.call is None:
                raise RuntimeError(f"{name} was called outside a code-mode Exec")
            exec_call = self._exec_call(info.exec_id, name)
            arguments = exec_call.overrides.pop(info.call, arguments)
            part = ToolCallPart(tool_name=name, args=arguments, tool_call_id=f"{info.exec_id}/{info.call}")
            return await _in_context(exec_call, info, _dispatch(exec_call.tool_manager, part, approved))

        annotations = (tool_def.metadata or {}).get("annotations")  # an MCP tool's hints
        read_only = isinstance(annotations, Mapping) and bool(annotations.get("readOnlyHint"))
        return exec_host.tool(
            call,
            name=name,
            description=tool_def.description or name,
            schema=tool_def.parameters_json_schema,
            read_only=read_only,
        )

    async def _approve(self, request: exec_host.ApprovalRequest) -> Any:
        """exec-host's approver: a script's call asks. The run's `HandleDeferredToolCalls`
        answers if it can; otherwise the script parks, to be answered after the run."""
        exec_call = self._run.execs.get(request.exec_id or "") if self._run is not None else None
        if exec_call is None:
            return ("deny", f"{request.tool} asks for approval outside a code-mode Exec")
        return await _in_context(exec_call, None, self._ask(exec_call, request))

    async def _ask(self, exec_call: _ExecCall, request: exec_host.ApprovalRequest) -> Any:
        part = ToolCallPart(tool_name=request.tool, args=request.input, tool_call_id=f"{request.exec_id}/{request.call}")
        requests = DeferredToolRequests(
            approvals=[part],
            metadata={part.tool_call_id: {METADATA_KEY: {"why": request.why, "rule": request.rule}}},
            validated_args={part.tool_call_id: request.input if isinstance(request.input, dict) else {}},
        )
        results = await exec_call.tool_manager.resolve_deferred_tool_calls(requests)
        answer = results.to_tool_call_results().get(part.tool_call_id) if results is not None else None
        if isinstance(answer, ToolDenied):
            return ("deny", answer.message)
        if isinstance(answer, ToolApproved):
            if answer.override_args is not None and request.call is not None:
                exec_call.overrides[request.call] = dict(answer.override_args)
            return "once"
        return "park"

    # --- the session --------------------------------------------------------------------------

    def _entered(self) -> _RunState:
        if self._run is None:
            raise UserError(
                "CodeModeToolset is used outside a run: an agent run enters it (`async with toolset:` otherwise)."
            )
        return self._run

    def _exec_call(self, exec_id: Optional[str], tool: str) -> _ExecCall:
        exec_call = self._run.execs.get(exec_id or "") if self._run is not None else None
        if exec_call is None:
            raise RuntimeError(f"{tool} was called outside a code-mode Exec")
        return exec_call

    async def _session(self, ctx: RunContext[Any], wrapped_tools: Mapping[str, ToolsetTool[Any]]) -> exec_host.Session:
        """The run's session, offering the wrapped tools; opened again when they change."""
        run = self._entered()
        callable_tools = {
            name: tool.tool_def for name, tool in wrapped_tools.items() if tool.tool_def.kind != "external"
        }
        for name in wrapped_tools:
            if name in _RESERVED:
                raise UserError(f"A tool may not be called {name!r} in code mode (the sandbox keeps the name): rename it.")
        described = [[d.name, d.description, d.parameters_json_schema, d.kind] for d in callable_tools.values()]
        key = json.dumps([ctx.conversation_id, described], sort_keys=True, default=str)
        async with run.lock:
            if run.session is not None and run.tools_key == key:
                return run.session
            if run.session is not None:
                await run.session.close()
                run.session = None
            if self.state_store is not None:
                store, key_file = self.state_store, self.state_key_file
            else:
                store, key_file = _adapters.private_store()
            asking = sorted(name for name, tool_def in callable_tools.items() if tool_def.kind == "unapproved")
            layer = copy.deepcopy(dict(self.settings or {}))
            permissions = dict(layer.get("permissions") or {})
            permissions["allow"] = [*(permissions.get("allow") or ()), *sorted(set(callable_tools) - set(asking))]
            # An `ask` rule outranks every allow rule and mode: such a tool always asks.
            permissions["ask"] = [*(permissions.get("ask") or ()), *asking]
            layer["permissions"] = permissions
            run.session = await exec_host.Session.open(
                tools=[self._bridge(tool_def) for tool_def in callable_tools.values()],
                settings=layer,
                permission_mode=self.permission_mode,
                limits=self.limits,
                state_store=store,
                state_key_file=key_file,
                conversation=_adapters.conversation(ctx.conversation_id, "pydantic-ai") if ctx.conversation_id else None,
                approver=self._approve,
            )
            run.tools_key = key
            return run.session

    async def _drop_denied(self, ctx: RunContext[Any], session: exec_host.Session, exec_name: str) -> None:
        """Discards the parked scripts of the Exec calls the history shows denied, wherever they
        parked: their waiting calls never run (exec-host would keep them until they expire)."""
        run = self._entered()
        denied = {
            part.tool_call_id
            for message in ctx.messages
            for part in getattr(message, "parts", ())
            if isinstance(part, ToolReturnPart) and part.outcome == "denied" and part.tool_name == exec_name
        } - run.denied_seen
        if denied:
            run.denied_seen |= denied
            await _adapters.discard(session, denied.__contains__)


@dataclass(kw_only=True)
class CodeMode(AbstractCapability[AgentDepsT]):
    """The capability that puts all of an agent's tools behind `Exec` (a `CodeModeToolset`
    around the toolset the agent assembles each run; output tools are left alone):

        agent = Agent(model, tools=[...], capabilities=[CodeMode()],
                      output_type=[str, DeferredToolRequests])

    Takes the options of `CodeModeToolset` (`toolset_id` is its `id`)."""

    state_store: Optional[PathLike] = None
    state_key_file: Optional[PathLike] = None
    permission_mode: str = "default"
    settings: Optional[Mapping[str, Any]] = None
    limits: Optional[exec_host.Limits] = None
    max_retries: int = 1
    toolset_id: Optional[str] = "exec_host"
    """The `id` of the `CodeModeToolset` it makes."""

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """The agent's toolset behind `Exec`."""
        return CodeModeToolset(
            toolset,
            state_store=self.state_store,
            state_key_file=self.state_key_file,
            permission_mode=self.permission_mode,
            settings=self.settings,
            limits=self.limits,
            max_retries=self.max_retries,
            id=self.toolset_id,
        )


def _callable(tool: ToolsetTool[AgentDepsT]) -> ToolsetTool[AgentDepsT]:
    """A wrapped tool as a script calls it: always available (exec-host's `ToolSearch` is how
    a script finds it, not pydantic-ai's deferred loading)."""
    tool_def = tool.tool_def
    if not tool_def.defer_loading and tool_def.with_native is None:
        return tool
    return dataclasses.replace(tool, tool_def=dataclasses.replace(tool_def, defer_loading=False, with_native=None))


async def _dispatch(tool_manager: ToolManager[Any], part: ToolCallPart, approved: bool) -> Any:
    """Runs one call of a script through the Exec's tool manager; returns plain JSON data."""
    try:
        # Raw errors: a script's mistake rejects its await, and spends none of the agent's retries.
        result = await tool_manager.handle_call(part, approved=approved, wrap_validation_errors=False)
    except (ApprovalRequired, CallDeferred) as error:
        # The tool decided only while running that it must wait (for approval, or for a result
        # from outside): exec-host asks before a call runs, never during one.
        raise RuntimeError(
            f"{part.tool_name} must wait ({type(error).__name__}), which a script's call cannot: "
            "declare it requires_approval=True to have it asked about before it runs, or keep it out of code mode"
        ) from error
    if isinstance(result, ToolDenied):
        raise PermissionError(result.message)
    if isinstance(result, ToolReturn):
        result = result.return_value
    return to_jsonable_python(result, serialize_unknown=True, bytes_mode="base64")


async def _in_context(exec_call: _ExecCall, info: Optional[exec_host.CallInfo], coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Runs `coroutine` in a task that starts from the context of the Exec tool's call (so the
    run's tracing and usage follow the script's calls), marked with the call it serves."""

    def start() -> "asyncio.Future[_T]":
        if info is not None:
            # What exec-host marks a tool's context with: the call, and how deep Execs nest.
            _tools._current_call.set(info)
            _tools.exec_depth.set(info.depth + 1)
        return asyncio.ensure_future(coroutine)

    # Cancelling the awaiting task (the script was aborted) cancels this one too.
    return await exec_call.context.copy().run(start)


def _image(image: exec_host.Image) -> BinaryContent:
    return BinaryContent(data=base64.b64decode(image.base64), media_type=image.mime_type)
