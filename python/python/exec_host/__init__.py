"""exec-host from Python: run model-written JavaScript that orchestrates tools in a
WebAssembly sandbox, with your own Python functions as tools.

    import asyncio, exec_host

    def add(a: int, b: int) -> int:
        "Adds two numbers."
        return a + b

    async def main():
        async with await exec_host.Session.open(tools=[add]) as session:
            result = await session.exec("return await tools.add({a: 2, b: 40})")
            print(result.value)  # 42

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import threading
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from . import _native

# At exit, work still running in Rust is cancelled and waited for (at most 2 s), so that no
# thread of the extension touches the interpreter while it finalizes.
atexit.register(_native.shutdown, 2.0)

__all__ = ["Session", "SyncSession", "ExecResult", "ExecError", "ApprovalRequest", "input_schema", "tool"]

_READ_ONLY = "__exec_host_read_only__"


def tool(function: Optional[Callable[..., Any]] = None, *, read_only: bool = False) -> Any:
    """Marks a function given to `Session.open(tools=...)`: `read_only=True` says it changes
    nothing, so the permission mode `default` runs it without asking (other tools ask, or need
    an allow rule)."""

    def mark(marked: Callable[..., Any]) -> Callable[..., Any]:
        setattr(marked, _READ_ONLY, read_only)
        return marked

    return mark(function) if function is not None else mark


@dataclass(frozen=True)
class ExecError:
    """Why an Exec failed: the stage of the failure and its message."""

    stage: str
    message: str


@dataclass(frozen=True)
class ExecResult:
    """What one Exec came to: whether it succeeded, the script's returned value, the text a
    model reads, the console output, the tools it called in order, and its failure."""

    ok: bool
    value: Any
    text: str
    logs: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    error: Optional[ExecError] = None


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that asks before it runs: the tool, the input it would run with, why it asks
    (the rule and its file, or the mode), and the rule "always" would save."""

    tool: str
    input: Any
    why: str
    rule: str


def _answer(answer: Any) -> Any:
    """An approver's answer as the host reads it: "once", "always", "deny", or
    ("deny", REASON) as {"deny": REASON}."""
    if isinstance(answer, tuple) and len(answer) == 2 and answer[0] == "deny":
        return {"deny": str(answer[1])}
    return answer


def _approver_spec(approver: Optional[Callable[[ApprovalRequest], Any]]) -> Optional[tuple[Callable[..., Any], bool]]:
    if approver is None:
        return None
    if inspect.iscoroutinefunction(approver):

        async def asked(request: dict[str, Any]) -> Any:
            return _answer(await approver(ApprovalRequest(**request)))

        return (asked, True)

    def asked_sync(request: dict[str, Any]) -> Any:
        return _answer(approver(ApprovalRequest(**request)))

    return (asked_sync, False)


_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    dict: {"type": "object"},
    list: {"type": "array"},
    type(None): {"type": "null"},
}


def _schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation, for the subset this package reads without pydantic:
    str, int, float, bool, None, list[X], dict[str, X], Optional[X] and X | Y. Anything else
    accepts any value."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation in _JSON_TYPES:
        return dict(_JSON_TYPES[annotation])
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is list and arguments:
        return {"type": "array", "items": _schema_of(arguments[0])}
    if origin is dict and len(arguments) == 2:
        return {"type": "object", "additionalProperties": _schema_of(arguments[1])}
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        return {"anyOf": [_schema_of(argument) for argument in arguments]}
    return {}


def input_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The input schema of `function` from its signature: one property per parameter, typed
    from its annotation, required unless it has a default."""
    hints = typing.get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        properties[name] = _schema_of(hints.get(name, parameter.annotation))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _tool_spec(function: Callable[..., Any]) -> tuple[str, str, dict[str, Any], Callable[..., Any], bool, bool]:
    """What the sandbox is told of a Python function, and how it is called: with the
    script's argument object spread as keyword arguments."""
    name = function.__name__
    description = inspect.getdoc(function) or name
    is_async = inspect.iscoroutinefunction(function)
    if is_async:

        async def called(arguments: dict[str, Any]) -> Any:
            return await function(**arguments)

    else:

        def called(arguments: dict[str, Any]) -> Any:
            return function(**arguments)

    return (name, description, input_schema(function), called, is_async, bool(getattr(function, _READ_ONLY, False)))


class Session:
    """One agent's sandbox and tools. Open it with `await Session.open(...)` on the event loop
    its tools' coroutines run on; close it with `await session.close()` or `async with`."""

    def __init__(self, native: Any) -> None:
        self._native = native

    @classmethod
    async def open(
        cls,
        *,
        workspace: Optional[str] = None,
        tools: Iterable[Callable[..., Any]] = (),
        settings: Optional[dict[str, Any]] = None,
        approver: Optional[Callable[[ApprovalRequest], Any]] = None,
    ) -> "Session":
        """Opens a session: the builtin workspace tools over `workspace` (a folder; None for
        none), each function of `tools` as a tool named after it, `settings`, a layer in the
        settings files' format (`{"permissions": {"allow": ["add"]}}`) that outranks them, and
        `approver`, called (sync or async) with an `ApprovalRequest` for each call that asks:
        it answers "once", "always", "deny" or ("deny", REASON); an exception denies, saying so.
        Without one, a call that asks is refused with the rule that would let it run."""
        specs = [_tool_spec(function) for function in tools]
        native = await _native.open_session(workspace, specs, settings, _approver_spec(approver))
        return cls(native)

    async def exec(self, code: str) -> ExecResult:
        """Runs `code` (the body of an async JavaScript function) as one Exec. Cancelling the
        task that awaits it aborts the Exec."""
        answer = await self._native.exec(code)
        error = answer.get("error")
        return ExecResult(
            ok=answer["ok"],
            value=answer.get("value"),
            text=answer["text"],
            logs=answer.get("logs", []),
            calls=answer.get("calls", []),
            error=ExecError(**error) if error else None,
        )

    async def close(self) -> None:
        """Stops the session's MCP servers and their children."""
        await self._native.close()

    async def __aenter__(self) -> "Session":
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.close()


def _not_in_a_running_loop() -> None:
    """Refuses to block the thread of a running event loop (it would wait on itself)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError("a SyncSession blocks: inside a running event loop, use `await Session.open(...)`")


class SyncSession:
    """A session for scripts and notebooks: the same options as `Session.open`, each method
    blocking until it is done. It runs on an event loop of its own, in a thread (where its
    `async def` tools and approver run). Ctrl-C while an Exec runs aborts it."""

    def __init__(self, **options: Any) -> None:
        _not_in_a_running_loop()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="exec-host", daemon=True)
        self._thread.start()
        try:
            self._session: Session = self._run(Session.open(**options))
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            raise

    def _run(self, coroutine: Any) -> Any:
        try:
            _not_in_a_running_loop()
        except RuntimeError:
            coroutine.close()
            raise
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def exec(self, code: str) -> ExecResult:
        """Runs `code` as one Exec and returns its result."""
        return self._run(self._session.exec(code))

    def close(self) -> None:
        """Closes the session and stops its thread."""
        if not self._thread.is_alive():
            return
        try:
            self._run(self._session.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()

    def __enter__(self) -> "SyncSession":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
