"""Code mode for LangChain 1.x and LangGraph: one tool, `Exec`, whose JavaScript calls yours.

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from exec_host.langchain import CodeModeTool

    exec_tool = CodeModeTool(tools=[get_order, refund], read_only=["get_order"])
    agent = create_agent(model, [exec_tool], checkpointer=InMemorySaver())

The model is offered `Exec` alone; its description names the tools given (a script asks
`tools.ToolSearch` for their parameters). A script calls `await tools.get_order({id: "A1"})`,
which runs the LangChain tool `get_order` (`invoke` when the agent runs sync, `ainvoke` when it
runs async) with the argument object and hands the script what it returned. Tool runs nest
under `Exec` in traces.

Approvals. A tool not named in `read_only` (nor allowed by a rule) asks before it runs. Inside
a LangGraph agent with a checkpointer, the Exec then parks in exec-host's state store and the
tool raises a LangGraph `interrupt()` whose value is shaped as HumanInTheLoopMiddleware's
`HITLRequest`; `Command(resume={"decisions": [...]})` answers it, one decision per call, and
the parked Exec continues where it stopped. No script runs twice: what the tool has done for
a model tool call is recorded under (thread, checkpoint namespace, tool call id).

Requires `langchain-core` 1.x and `langgraph` 1.x (`pip install "exec-host[langchain]"`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import json
import os
import typing
from functools import lru_cache
from typing import Annotated, Any, Callable, Literal, Optional, Sequence, Union

try:
    from langchain_core.messages import ToolMessage
    from langchain_core.runnables import RunnableConfig, ensure_config
    from langchain_core.tools import BaseTool, ToolException
    from langchain_core.tools import tool as as_langchain_tool
    from langchain_core.utils.function_calling import convert_to_openai_function
    from langgraph.errors import GraphBubbleUp
    from langgraph.prebuilt import ToolRuntime
    from langgraph.store.base import BaseStore
    from langgraph.types import Command, interrupt

    # Private to langgraph, and the only way to read which arguments ToolNode injects into a
    # tool (ToolRuntime, InjectedState, InjectedStore) the way ToolNode itself reads them.
    from langgraph.prebuilt.tool_node import _get_all_injected_args
except ImportError as missing:  # pragma: no cover - depends on what is installed
    raise ImportError(f"exec_host.langchain needs langchain-core 1.x and langgraph 1.x: pip install 'exec-host[langchain]' ({missing})") from missing
from pydantic import BaseModel, Discriminator, Field, PrivateAttr, create_model, field_validator
from typing_extensions import NotRequired, TypedDict

import exec_host

from . import _adapters

__all__ = [
    "ApproveDecision",
    "CodeModeTool",
    "ExecApprovalRequest",
    "ExecApprovalResponse",
    "RejectDecision",
]

# Where LangGraph keeps the checkpointer in a run's config; without one, an interrupt could
# never be resumed, so the Exec does not park.
_CHECKPOINTER_KEY = "__pregel_checkpointer"

# The namespaces of this tool's records in a graph's BaseStore.
_PARKED_NAMESPACE = ("exec_host", "parked")
_ALWAYS_NAMESPACE = ("exec_host", "always")


# --------------------------------------------------------------------------------------------
# The interrupt: its value and the answer it takes.
# --------------------------------------------------------------------------------------------


class ApproveDecision(TypedDict):
    """Runs the call. `always`: this tool runs without asking for the rest of the thread."""

    type: Literal["approve"]
    always: NotRequired[bool]


class RejectDecision(TypedDict):
    """Refuses the call: the script's `await` rejects with `message` (or a default reason)."""

    type: Literal["reject"]
    message: NotRequired[str]


#: One decision, told apart by its `type`.
Decision = Annotated[Union[ApproveDecision, RejectDecision], Discriminator("type")]


class ExecApprovalResponse(TypedDict):
    """The answer to an `ExecApprovalRequest`: HumanInTheLoopMiddleware's `HITLResponse`
    with the decisions `approve` (and its `always`) and `reject`, one per action request,
    in order."""

    decisions: list[Decision]


class ExecApprovalRequest(TypedDict):
    """The value of the interrupt an Exec raises when it parks: HumanInTheLoopMiddleware's
    `HITLRequest` (`action_requests` and `review_configs`, one per call waiting, in order:
    the tool, the input it would run with, why it asks) plus `type` ("exec_approval"), the
    model's `tool_call_id` of the Exec and its `code`."""

    type: Literal["exec_approval"]
    tool_call_id: str
    code: str
    action_requests: list[dict[str, Any]]
    review_configs: list[dict[str, Any]]


@lru_cache(maxsize=None)
def _answer_schema(count: int) -> type[BaseModel]:
    """The response schema of an interrupt asking about `count` calls: LangGraph checks an
    answer against it before saving it, so a wrong one fails the run and can be sent again."""
    return create_model(
        "ExecApprovalResponse",
        decisions=(list[Decision], Field(min_length=count, max_length=count)),
    )


def _approval_request(paused: exec_host.Paused, code: str, tool_call_id: str) -> dict[str, Any]:
    """The interrupt's value (see `ExecApprovalRequest`) for a parked Exec."""
    return {
        "type": "exec_approval",
        "tool_call_id": tool_call_id,
        "code": code,
        "action_requests": [
            {"name": waiting.tool, "args": waiting.input, "description": f"The Exec script calls `{waiting.tool}`: {waiting.why}"}
            for waiting in paused.approvals
        ],
        "review_configs": [{"action_name": waiting.tool, "allowed_decisions": ["approve", "reject"]} for waiting in paused.approvals],
    }


# --------------------------------------------------------------------------------------------
# The tools a script calls.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Inner:
    """A LangChain tool as exec-host is told of it, and what ToolNode would inject into it."""

    tool: BaseTool
    name: str
    description: str
    schema: dict[str, Any]
    output_schema: Optional[dict[str, Any]]
    has_sync: bool
    runtime_arg: Optional[str]
    store_arg: Optional[str]
    state_args: dict[str, Optional[str]]
    injected: frozenset[str]

    @classmethod
    def of(cls, tool: BaseTool) -> "_Inner":
        # What a provider would be sent for the tool: the model-facing schema, injected
        # arguments left out.
        function = convert_to_openai_function(tool)
        injected = _get_all_injected_args(tool)
        runtime_arg = injected.runtime
        return cls(
            tool=tool,
            name=function["name"],
            description=function.get("description") or function["name"],
            schema=function.get("parameters") or {"type": "object", "properties": {}},
            output_schema=_output_schema(tool),
            has_sync=_has_sync(tool),
            runtime_arg=runtime_arg,
            store_arg=injected.store,
            state_args=dict(injected.state),
            injected=frozenset(injected.all_injected_keys | ({runtime_arg} if runtime_arg else set())),
        )

    @property
    def needs_injection(self) -> bool:
        return bool(self.injected or self.state_args or self.store_arg)


def _has_sync(tool: BaseTool) -> bool:
    """False for a tool made from a coroutine alone (its `invoke` raises)."""
    return not (hasattr(tool, "func") and tool.func is None and getattr(tool, "coroutine", None) is not None)


def _output_schema(tool: BaseTool) -> Optional[dict[str, Any]]:
    """The schema of what a tool made from a function returns, read from its return
    annotation, so a script's declarations say more than `unknown`. None for `str` (a
    string holding JSON reaches the script parsed) and for `content_and_artifact` tools."""
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if function is None or getattr(tool, "response_format", "content") != "content":
        return None
    try:
        if typing.get_type_hints(function).get("return") is str:
            return None
        return exec_host.output_schema(function)
    except Exception:  # an annotation that cannot be read leaves the output undeclared
        return None


def _plain(output: Any) -> Any:
    """A LangChain tool's output as the script receives it: a ToolMessage's content, a string
    that holds a JSON object or array parsed, a pydantic model dumped, other data as is."""
    if isinstance(output, Command):
        raise ToolException("the tool answered with a LangGraph Command (a graph update), which a script cannot apply")
    if isinstance(output, ToolMessage):
        if output.status == "error":
            raise ToolException(output.text)
        output = output.content
    if isinstance(output, str):
        return _adapters.parsed(output)
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if isinstance(output, tuple):
        return list(output)
    return output


@dataclasses.dataclass
class _Run:
    """One run of `Exec` for one model tool call: the config its tools run under (children of
    the Exec's run in traces) and the ToolRuntime ToolNode gave it."""

    config: RunnableConfig
    runtime: Optional[ToolRuntime]
    tool_call_id: Optional[str]

    def _input(self, inner: _Inner, arguments: dict[str, Any]) -> Any:
        if not inner.needs_injection:
            return arguments
        # Called as ToolNode calls it: a ToolCall with an id of its own (the call's place in
        # the script, the same when a parked Exec resumes) and the injected values, never
        # the script's values for them.
        info = exec_host.current_call()
        call_id = f"{self.tool_call_id or 'exec'}.{info.call if info and info.call is not None else 0}"
        arguments = {key: value for key, value in arguments.items() if key not in inner.injected}
        if inner.runtime_arg:
            if self.runtime is None:
                raise ToolException(f"`{inner.name}` needs a ToolRuntime: run Exec inside a LangGraph agent")
            arguments[inner.runtime_arg] = dataclasses.replace(self.runtime, tool_call_id=call_id)
        if inner.store_arg:
            if self.runtime is None or self.runtime.store is None:
                raise ToolException(f"`{inner.name}` needs a store: give the agent one")
            arguments[inner.store_arg] = self.runtime.store
        state = self.runtime.state if self.runtime is not None else {}
        for argument, field in inner.state_args.items():
            if not field:
                arguments[argument] = state
            elif isinstance(state, dict):
                if field in state:
                    arguments[argument] = state[field]
            elif hasattr(state, field):
                arguments[argument] = getattr(state, field)
        return {"type": "tool_call", "name": inner.tool.name, "id": call_id, "args": arguments}

    def call(self, inner: _Inner, arguments: dict[str, Any]) -> Any:
        try:
            return _plain(inner.tool.invoke(self._input(inner, arguments), self.config))
        except GraphBubbleUp as error:
            raise ToolException(_NO_INNER_INTERRUPT.format(inner.name)) from error

    async def acall(self, inner: _Inner, arguments: dict[str, Any]) -> Any:
        try:
            return _plain(await inner.tool.ainvoke(self._input(inner, arguments), self.config))
        except GraphBubbleUp as error:
            raise ToolException(_NO_INNER_INTERRUPT.format(inner.name)) from error


_NO_INNER_INTERRUPT = "`{}` raised a LangGraph interrupt inside an Exec script; let exec-host ask instead (leave it out of read_only)"


def _bridge(run: _Run, inner: _Inner, read_only: bool, *, sync: bool) -> Callable[..., Any]:
    """The function exec-host calls for `inner`, with the script's argument object as keyword
    arguments. Sync when the agent runs sync and the tool can (exec-host runs it on a worker
    thread), else async (on the loop of the Exec)."""
    if sync and inner.has_sync:

        def called(**arguments: Any) -> Any:
            return run.call(inner, arguments)

    else:

        async def called(**arguments: Any) -> Any:  # type: ignore[misc]
            return await run.acall(inner, arguments)

    return exec_host.tool(
        called, name=inner.name, description=inner.description, schema=inner.schema, output_schema=inner.output_schema, read_only=read_only
    )


# --------------------------------------------------------------------------------------------
# Records: what this tool did for a model tool call, across LangGraph's re-runs of it.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where a tool call runs in a checkpointed graph: its thread and checkpoint namespace."""

    thread: str
    namespace: str
    tool_call_id: str

    @classmethod
    def of(cls, runtime: Optional[ToolRuntime]) -> Optional["_Place"]:
        """None outside a graph with a checkpointer, where an interrupt can never resume."""
        if runtime is None or not runtime.tool_call_id:
            return None
        configurable = (runtime.config or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        if thread is None or configurable.get(_CHECKPOINTER_KEY) is None:
            return None
        return cls(str(thread), str(configurable.get("checkpoint_ns") or ""), runtime.tool_call_id)

    @property
    def key(self) -> str:
        return json.dumps([self.thread, self.namespace, self.tool_call_id])

    @property
    def conversation(self) -> str:
        """The exec-host conversation of the thread (parked Execs and `store()` values belong
        to it)."""
        return _adapters.conversation(self.thread, "langgraph")


class _Records:
    """Records kept in the graph's BaseStore when it has one (durable with it), else in this
    tool's memory. Sync stores are read from the sync path, async ones awaited."""

    def __init__(self, store: Optional[BaseStore], memory: dict[tuple[Any, ...], Any], *, sync: bool) -> None:
        self.store = store
        self.memory = memory
        self.sync = sync

    async def get(self, namespace: tuple[str, ...], key: str) -> Optional[dict[str, Any]]:
        if self.store is None:
            value = self.memory.get((namespace, key))
            return json.loads(value) if value is not None else None
        item = self.store.get(namespace, key) if self.sync else await self.store.aget(namespace, key)
        return dict(item.value) if item is not None else None

    async def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        if self.store is None:
            # Kept as JSON text: what the graph's store would keep, never shared with the caller.
            self.memory[(namespace, key)] = json.dumps(value)
        elif self.sync:
            self.store.put(namespace, key, value)
        else:
            await self.store.aput(namespace, key, value)


# --------------------------------------------------------------------------------------------
# The tool.
# --------------------------------------------------------------------------------------------


class CodeModeTool(BaseTool):
    """`Exec`: runs a JavaScript script in exec-host's WebAssembly sandbox; the script calls
    `tools`, each one of the LangChain tools given. Give it to an agent in place of them.

    - `tools`: LangChain tools (or plain functions, made tools with `langchain_core`'s `tool`).
      Tools that take a `ToolRuntime`, `InjectedState`, `InjectedStore` or
      `InjectedToolCallId` are given them as ToolNode would; each call of a script has its
      own tool call id, `<Exec's tool call id>.<the call's place in the script>`.
    - `read_only`: names of tools that change nothing: they run without asking. Every other
      tool asks, unless `allow` (or `settings`, `permission_mode`) lets it run.
    - `allow`, `deny`, `ask`: exec-host permission rules (`"get_order"`, `"refund"`);
      `settings`: an exec-host settings layer; `permission_mode`: `"default"`,
      `"acceptEdits"`, `"plan"`, `"dontAsk"` or `"bypassPermissions"`; `limits`: what one
      Exec may take (`exec_host.Limits`).
    - `approver`: answers each call that asks (sync or async, given an
      `exec_host.ApprovalRequest`): "once", "always", "deny", ("deny", REASON), or "park"
      (ask a person through an interrupt). By default a call that asks parks inside a graph
      with a checkpointer, and is refused elsewhere, saying which rule would let it run.
    - `state_store`, `state_key_file`: where parked Execs and scripts' `store()` values are
      kept (a folder or `redis://`), and the key that seals them (by default this machine's
      exec-host key). Without `state_store`, this process's private temporary folder and key
      serve (removed at exit): a parked Exec then resumes only in this process. Give both,
      with a durable checkpointer and a durable `store=` for the agent (where this tool keeps
      its records), to resume in another process.

    Each LangGraph thread is one exec-host conversation: its Execs' `store()`/`load()` values
    and "always" answers are the thread's own. A failed script is a ToolMessage with status
    "error" the model reads; the script's value, logs, nested calls and images are the
    ToolMessage's `artifact`."""

    name: str = "Exec"
    description: str = ""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: Any = True

    tools: list[BaseTool] = Field(default_factory=list)
    """The tools a script calls."""
    read_only: frozenset[str] = frozenset()
    """Tools that run without asking."""
    allow: tuple[str, ...] = ()
    """Permission rules that let calls run without asking."""
    deny: tuple[str, ...] = ()
    """Permission rules that refuse calls."""
    ask: tuple[str, ...] = ()
    """Permission rules that make calls ask, whatever else allows them."""
    settings: Optional[dict[str, Any]] = None
    """An exec-host settings layer."""
    permission_mode: Optional[str] = None
    """exec-host's permission mode."""
    limits: Optional[exec_host.Limits] = None
    """What one Exec may take."""
    approver: Optional[Callable[..., Any]] = None
    """Answers each call that asks; by default it parks inside a checkpointed graph."""
    state_store: Optional[str] = None
    """Where parked Execs are kept; by default a private temporary folder."""
    state_key_file: Optional[str] = None
    """The key that seals the state store."""

    _inner: list[_Inner] = PrivateAttr(default_factory=list)
    _input_schema: dict[str, Any] = PrivateAttr(default_factory=dict)
    _store: str = PrivateAttr(default="")
    _key_file: Optional[str] = PrivateAttr(default=None)
    _memory: dict[tuple[Any, ...], Any] = PrivateAttr(default_factory=dict)

    @field_validator("tools", mode="before")
    @classmethod
    def _as_tools(cls, tools: Sequence[Any]) -> list[BaseTool]:
        return [tool if isinstance(tool, BaseTool) else as_langchain_tool(tool) for tool in tools]

    @field_validator("read_only", mode="before")
    @classmethod
    def _names(cls, names: Any) -> frozenset[str]:
        return frozenset([names] if isinstance(names, str) else names)

    @field_validator("allow", "deny", "ask", mode="before")
    @classmethod
    def _rules(cls, rules: Any) -> tuple[str, ...]:
        return (rules,) if isinstance(rules, str) else tuple(rules)

    @field_validator("state_store", "state_key_file", mode="before")
    @classmethod
    def _path(cls, path: Any) -> Any:
        return os.fspath(path) if isinstance(path, os.PathLike) else path

    def model_post_init(self, context: Any) -> None:
        """Reads the tools, sets up the state store, and takes `Exec`'s description."""
        super().model_post_init(context)
        self._inner = [_Inner.of(tool) for tool in self.tools]
        names = [inner.name for inner in self._inner]
        if len(set(names)) != len(names):
            raise ValueError(f"two tools have one name: {sorted(name for name in names if names.count(name) > 1)}")
        if unknown := sorted(self.read_only - set(names)):
            raise ValueError(f"read_only names tools that are not given: {unknown}")
        if self.state_store is None:
            if self.state_key_file is not None:
                raise ValueError("state_key_file seals a state_store: give both")
            self._store, self._key_file = _adapters.private_store()
        else:
            self._store, self._key_file = self.state_store, self.state_key_file
        declaration = _run_on_a_loop(self._declare())
        self.name = declaration["name"]
        self.description = declaration["description"]
        self._input_schema = declaration["input_schema"]

    @property
    def tool_call_schema(self) -> dict[str, Any]:  # type: ignore[override]
        """`Exec`'s input as exec-host declares it: what `bind_tools` sends a model."""
        return {**self._input_schema, "description": self.description}

    # --- sessions ------------------------------------------------------------------------

    async def _open(
        self, run: _Run, *, sync: bool, approver: Any = None, conversation: Optional[str] = None, parking: bool = True
    ) -> exec_host.Session:
        """A session for one run of `Exec`. One per run, not one per tool: a session has one
        conversation (a thread's), and its tools close over this run's config and runtime."""
        return await exec_host.Session.open(
            tools=[_bridge(run, inner, inner.name in self.read_only, sync=sync) for inner in self._inner],
            settings=self.settings,
            permission_mode=self.permission_mode,
            allow=self.allow,
            deny=self.deny,
            ask=self.ask,
            limits=self.limits,
            state_store=self._store if parking else None,
            state_key_file=self._key_file if parking else None,
            conversation=conversation,
            approver=approver,
        )

    async def _declare(self) -> dict[str, Any]:
        """exec-host's declaration of `Exec` (its description ends with the catalogue)."""
        session = await self._open(_Run(config={}, runtime=None, tool_call_id=None), sync=False, parking=False)
        try:
            return session.declaration()
        finally:
            await session.close()

    def _approver(self, always: frozenset[str], can_park: bool) -> Optional[Callable[..., Any]]:
        """The session's approver: the tools a person allowed always in this thread run; the
        others are asked of `approver`, else parked (inside a checkpointed graph)."""
        given = self.approver
        if given is None and not can_park:
            return None

        async def asked(request: exec_host.ApprovalRequest) -> Any:
            if request.tool in always:
                return "once"
            return await _adapters.ask(given, request) if given is not None else "park"

        return asked

    # --- running -------------------------------------------------------------------------

    def _run(self, code: str, runtime: ToolRuntime = None) -> Any:  # type: ignore[assignment]
        """The sync path (`agent.invoke`/`stream`): the same driver, on a loop of its own."""
        # ensure_config() is the config BaseTool.run made for this run: tools nest under it.
        return _run_on_a_loop(self._drive(code, runtime, ensure_config(), sync=True))

    async def _arun(self, code: str, runtime: ToolRuntime = None) -> Any:  # type: ignore[assignment]
        """The async path (`agent.ainvoke`/`astream`): a session on the running loop."""
        return await self._drive(code, runtime, ensure_config(), sync=False)

    async def _drive(self, code: Any, runtime: Optional[ToolRuntime], config: RunnableConfig, *, sync: bool) -> Any:
        """Runs the script, or, when LangGraph runs this tool call again after an interrupt,
        takes up its parked Exec: the script never runs twice and each parked Exec is
        resumed once, with the answer to its interrupt."""
        if not isinstance(code, str):
            raise ToolException("`code` must be a string")
        place = _Place.of(runtime)
        run = _Run(config=config, runtime=runtime, tool_call_id=runtime.tool_call_id if runtime else None)
        if place is None:
            session = await self._open(run, sync=sync, approver=self._approver(frozenset(), can_park=False))
            try:
                result = await session.exec(code, id=run.tool_call_id)
                if result.paused is not None:  # an approver of the caller's parked it
                    await session.discard(result.paused.handle)
                    raise ToolException("a call of the script waits for a person, which needs a LangGraph agent with a checkpointer")
            finally:
                await session.close()
            return _output(_outcome(result))

        records = _Records(runtime.store, self._memory, sync=sync)
        record = await records.get(_PARKED_NAMESPACE, place.key)
        if record is not None and "final" in record:
            return _output(record["final"])  # this tool call came to its end already
        always = await records.get(_ALWAYS_NAMESPACE, place.thread) or {"tools": []}
        approver = self._approver(frozenset(always["tools"]), can_park=True)
        session = await self._open(run, sync=sync, approver=approver, conversation=place.conversation)
        try:
            if record is None:
                result = await session.exec(code, id=place.tool_call_id)
                if result.paused is None:
                    return _output(_outcome(result))
                record = {"steps": [_step(result.paused, code, place)], "resumed": 0}
                await records.put(_PARKED_NAMESPACE, place.key, record)
            step = 0
            while True:
                if step >= len(record["steps"]):
                    raise ToolException("the parked Exec was resumed, but what it came to was not recorded; nothing runs again")
                request = record["steps"][step]["request"]
                # The first time, this raises GraphInterrupt; when the graph runs this tool call
                # again, it returns the answers in the same order.
                answer = interrupt(request, response_schema=_answer_schema(len(request["action_requests"])))
                if step < record["resumed"]:
                    step += 1  # answered and resumed in an earlier run
                    continue
                answers, allowed = _resume_arguments(record["steps"][step], answer)
                if allowed:
                    # Read again: another Exec of the thread may have added tools meanwhile.
                    kept = await records.get(_ALWAYS_NAMESPACE, place.thread) or {"tools": []}
                    await records.put(_ALWAYS_NAMESPACE, place.thread, {"tools": sorted(set(kept["tools"]) | allowed)})
                try:
                    result = await session.resume(record["steps"][step]["handle"], **answers)
                except exec_host.ResumeError as error:
                    # Expired (a day by default), discarded, or taken up elsewhere: the tool
                    # call ends here, and says so.
                    record["final"] = {"error": f"the parked Exec could not be resumed ({error}); nothing after its pause ran"}
                    await records.put(_PARKED_NAMESPACE, place.key, record)
                    raise ToolException(record["final"]["error"]) from error
                record["resumed"] = step = step + 1
                if result.paused is None:
                    record["final"] = _outcome(result)
                    await records.put(_PARKED_NAMESPACE, place.key, record)
                    return _output(record["final"])
                record["steps"].append(_step(result.paused, code, place))
                await records.put(_PARKED_NAMESPACE, place.key, record)
        finally:
            await session.close()


def _step(paused: exec_host.Paused, code: str, place: _Place) -> dict[str, Any]:
    """A record's step: the parked Exec's handle, the ids of the calls it waits for, and the
    interrupt asking about them (in the same order)."""
    return {
        "handle": paused.handle,
        "ids": [waiting.id for waiting in paused.approvals],
        "request": _approval_request(paused, code, place.tool_call_id),
    }


def _outcome(result: exec_host.ExecResult) -> dict[str, Any]:
    """What an Exec came to, as plain data a record keeps: the text a model reads, and the
    artifact, or the error."""
    if not result.ok:
        return {"error": result.text}
    artifact: dict[str, Any] = {"value": result.value, "logs": result.logs, "calls": result.calls}
    if result.images:
        artifact["images"] = [{"mime_type": image.mime_type, "base64": image.base64} for image in result.images]
    return {"content": result.text, "artifact": artifact}


def _output(outcome: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool's output (content and artifact); a failed script raises ToolException, which
    BaseTool turns into a ToolMessage with status "error"."""
    if "error" in outcome:
        raise ToolException(outcome["error"])
    return outcome["content"], outcome["artifact"]


def _resume_arguments(step: dict[str, Any], answer: Any) -> tuple[dict[str, Any], set[str]]:
    """A step's decisions as `Session.resume`'s arguments, and the tools allowed always."""
    decisions = answer.decisions if isinstance(answer, BaseModel) else answer["decisions"]
    approve: list[int] = []
    always: list[int] = []
    deny: dict[int, str] = {}
    allowed: set[str] = set()
    for id, action, decision in zip(step["ids"], step["request"]["action_requests"], decisions):
        if decision["type"] == "approve":
            if decision.get("always"):
                always.append(id)
                allowed.add(action["name"])
            else:
                approve.append(id)
        else:
            deny[id] = decision.get("message") or "the user rejected this call"
    return {"approve": approve, "always": always, "deny": deny}, allowed


def _run_on_a_loop(coroutine: Any) -> Any:
    """Runs `coroutine` to its end on a new event loop: in this thread, or, when this thread
    runs a loop already (a notebook), in another one, since blocking a loop on itself hangs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    context = contextvars.copy_context()  # interrupt() reads the run's config from it
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="exec-host") as pool:
        return pool.submit(context.run, asyncio.run, coroutine).result()
