"""`Session`, the asyncio API, and `SyncSession`, the blocking one for scripts and notebooks."""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Literal, Mapping, Optional, Sequence, Union

from . import _native, _tools
from ._results import ApprovalRequest, ExecResult, InputRequest, Paused, Turn, paused_from, result_from

SessionError = _native.SessionError
ResumeError = _native.ResumeError

Provider = Literal["anthropic", "openai-responses", "openai-chat"]
Answer = Union[str, tuple]
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Limits:
    """What one Exec may take; each left None keeps the library's default. Times are in
    seconds. `budget`: the script's own running time (waiting on tools does not count);
    `max_calls`: nested calls; `max_log_chars`, `max_result_chars`, `max_images`: what is
    kept of its output; `max_memory_bytes`: the sandbox's memory; `max_nested_wait`: how long
    it may wait on its tools in all; `max_argument_bytes`: one call's arguments."""

    budget: Optional[float] = None
    max_calls: Optional[int] = None
    max_log_chars: Optional[int] = None
    max_result_chars: Optional[int] = None
    max_images: Optional[int] = None
    max_memory_bytes: Optional[int] = None
    max_nested_wait: Optional[float] = None
    max_argument_bytes: Optional[int] = None


def _answer(answer: Any) -> Any:
    """An answer as the host reads it: "once", "always", "park", "deny", or ("deny", REASON)
    as {"deny": REASON}."""
    if isinstance(answer, tuple) and len(answer) == 2 and answer[0] == "deny":
        return {"deny": str(answer[1])}
    return answer


def _callable_spec(function: Optional[Callable[..., Any]], wrap: Callable[[Any], Any], read: Callable[[Any], Any]) -> Optional[tuple[Callable[..., Any], bool]]:
    """A callback as the extension calls it: with a dict, turned into the request object by
    `wrap`, its answer read by `read`; sync on a worker thread, async on the loop."""
    if function is None:
        return None
    if inspect.iscoroutinefunction(function):

        async def asked(request: dict[str, Any]) -> Any:
            return read(await function(wrap(request)))

        return (asked, True)

    def asked_sync(request: dict[str, Any]) -> Any:
        return read(function(wrap(request)))

    return (asked_sync, False)


def _input_answer(answer: Any) -> Any:
    """An input handler's answer: a dict of values accepts, "decline" and "cancel" say so."""
    if isinstance(answer, dict):
        return {"accept": answer}
    return answer


class Session:
    """One agent's sandbox and tools. Open it with `await Session.open(...)`; close it with
    `await session.close()` or `async with`. A session may be shared between tasks and
    threads; its Execs run concurrently."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._closed = False

    @classmethod
    async def open(
        cls,
        *,
        workspace: Optional[PathLike] = None,
        tools: Iterable[Callable[..., Any]] = (),
        mcp_servers: Union[PathLike, Mapping[str, Any], None] = None,
        apis: Optional[Mapping[str, Any]] = None,
        settings: Optional[Mapping[str, Any]] = None,
        settings_files: Iterable[PathLike] = (),
        permission_mode: Optional[str] = None,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Sequence[str] = (),
        bash: Optional[bool] = None,
        limits: Optional[Limits] = None,
        state_store: Optional[PathLike] = None,
        state_key_file: Optional[PathLike] = None,
        conversation: Optional[str] = None,
        approver: Optional[Callable[[ApprovalRequest], Any]] = None,
        input_handler: Optional[Callable[[InputRequest], Any]] = None,
    ) -> "Session":
        """Opens a session.

        - `workspace`: the folder the builtin tools (`read_file`, `glob`, `Bash`, ...) work
          in; None for none.
        - `tools`: Python functions, each a tool (see `tool`). Sync ones run on a worker
          thread, `async def` ones on the event loop of the Exec that calls them.
        - `mcp_servers`: a configuration file in the `mcpServers` format, or its contents as
          a dict (`{"mcpServers": {...}}`, or the servers alone); it may hold `apis` too.
        - `apis`: HTTP APIs described by OpenAPI, by name, each as in a configuration file
          (`{"github": {"spec": "github.json", "auth": {"type": "bearer", "token": ...}}}`,
          see docs/http-apis.md): each operation is a tool `api__<name>__<operation>`.
        - `settings`: a settings layer (the settings files' format) that outranks every file;
          `settings_files`: files to read, lowest first.
        - `permission_mode`: `default`, `acceptEdits`, `plan`, `dontAsk` or
          `bypassPermissions`; `allow`, `deny`, `ask`: permission rules (`"add"`,
          `"Bash(git *)"`, `"mcp__github__*"`) added to `settings`.
        - `bash`: True offers the `Bash` tool (commands confined to the workspace, no network
          unless the settings open it), False keeps it off whatever the settings files say;
          None (the default) leaves it to them (off unless one sets `"enableBash": true`).
        - `limits`: what one Exec may take (`Limits`).
        - `state_store`: a folder or `redis://HOST:PORT/DB` where Execs park and scripts'
          `store()` values are kept; `state_key_file`: the key that seals them (by default
          this machine's, made when missing). Neither may be inside the workspace.
        - `conversation`: the id parked Execs and stored values belong to (a new one by
          default): another process resumes with the same id and store.
        - `approver`: called (sync or async) with an `ApprovalRequest` for each call that
          asks; it answers "once", "always", "park" (the Exec parks; needs a state store),
          "deny" or ("deny", REASON). An exception denies, saying so. Without one, a call
          that asks is refused with the rule that would let it run.
        - `input_handler`: called with an `InputRequest` when an MCP server asks a question
          during a call; it answers a dict of values, "decline" or "cancel".

        Raises `SessionError` when the session cannot start (a broken settings file, a
        store that cannot be opened, ...). An MCP server that does not start does not stop
        the others: `session.start_failures` says why."""
        options: dict[str, Any] = {
            "workspace": os.fspath(workspace) if workspace is not None else None,
            "settings": dict(settings) if settings is not None else None,
            "allow": list(allow),
            "deny": list(deny),
            "ask": list(ask),
            "bash": bash,
            "settings_files": [os.fspath(file) for file in settings_files],
            "permission_mode": permission_mode,
            "limits": {key: value for key, value in asdict(limits).items() if value is not None} if limits else None,
            "state_store": os.fspath(state_store) if state_store is not None else None,
            "state_key_file": os.fspath(state_key_file) if state_key_file is not None else None,
            "conversation": conversation,
        }
        if isinstance(mcp_servers, Mapping):
            whole = "mcpServers" in mcp_servers or "apis" in mcp_servers
            options["mcp_servers"] = dict(mcp_servers) if whole else {"mcpServers": dict(mcp_servers)}
        elif mcp_servers is not None:
            options["mcp_servers"] = os.fspath(mcp_servers)
        if apis is not None:
            options["apis"] = dict(apis)
        options = {key: value for key, value in options.items() if value is not None}
        specs = [_tools.spec(function) for function in tools]
        approve = _callable_spec(approver, lambda request: ApprovalRequest(**request), _answer)
        answer = _callable_spec(input_handler, lambda request: InputRequest(**request), _input_answer)
        return cls(await _native.open_session(options, specs, approve, answer))

    def _open(self) -> Any:
        if self._closed:
            raise SessionError("the session is closed")
        return self._native

    @property
    def conversation(self) -> Optional[str]:
        """The conversation this session's parked Execs and stored values belong to."""
        return self._native.conversation

    @property
    def start_failures(self) -> list[str]:
        """Why each MCP server that did not start did not, one sentence each."""
        return list(self._native.start_failures)

    @property
    def permission_mode(self) -> str:
        """The permission mode in force."""
        return self._open().permission_mode()

    async def exec(self, code: str, *, id: Optional[str] = None) -> ExecResult:
        """Runs `code` (the body of an async JavaScript function) as one Exec and returns its
        result; a script that fails is a result with `ok` False, not an exception. `id`
        names the Exec (its tools read it in `current_call().exec_id`, the approver in
        `ApprovalRequest.exec_id`); a new one by default. Cancelling the task that awaits it
        aborts the Exec, its tool calls included."""
        return await self._exec(code, _tools.exec_depth.get(), id)

    async def _exec(self, code: str, depth: int, id: Optional[str] = None) -> ExecResult:
        native = self._open()
        if depth > _tools.MAX_EXEC_DEPTH:
            raise SessionError(f"an Exec started by a tool may nest at most {_tools.MAX_EXEC_DEPTH} deep")
        return result_from(await native.exec(code, depth, id))

    async def resume(
        self,
        handle: str,
        *,
        approve: Union[Iterable[int], Literal["all"]] = (),
        always: Iterable[int] = (),
        deny: Union[Mapping[int, str], Iterable[int]] = (),
    ) -> ExecResult:
        """Continues the parked Exec `handle` where it stopped, with no call made twice:
        the calls of `approve` run once (`"all"`: every call it waits for), those of
        `always` run and are allowed from then on, those of `deny` are refused (with a
        reason each, given as a dict). A call left unanswered parks again. Raises
        `ResumeError` when the handle is unknown, expired, or resumed already."""
        native = self._open()
        answers: dict[str, Any] = {}
        if approve == "all":
            approve = [approval.id for approval in (await self.parked(handle)).approvals]
        for id in approve:
            answers[str(id)] = "once"
        for id in always:
            answers[str(id)] = "always"
        denied = deny.items() if isinstance(deny, Mapping) else ((id, "denied") for id in deny)
        for id, reason in denied:
            answers[str(id)] = {"deny": reason}
        return result_from(await native.resume(handle, answers))

    async def parked(self, handle: str) -> Paused:
        """What the parked Exec `handle` waits for."""
        return paused_from(await self._open().parked(handle))

    async def parked_execs(self) -> list[Paused]:
        """Every parked Exec of this conversation."""
        return [paused_from(parked) for parked in await self._open().parked_list()]

    async def discard(self, handle: str) -> None:
        """Drops the parked Exec `handle`: the calls it waits for never run."""
        await self._open().discard(handle)

    def declaration(self) -> dict[str, Any]:
        """The `Exec` tool as a model is offered it: `name`, `description` (with the
        TypeScript declarations of the tools its scripts reach) and `input_schema`."""
        return self._open().declaration()

    def declaration_file(self) -> str:
        """A TypeScript declaration file (`.d.ts`) of everything a script reaches now."""
        return self._open().declaration_file()

    def search(self, query: str, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """The tools that match `query`, as a script's `tools.ToolSearch` finds them: each
        with `name`, `description` and `signature`."""
        return self._open().search(query, limit)["matches"]

    def prepare(self, history: Sequence[Mapping[str, Any]], provider: Optional[Provider] = None) -> dict[str, Any]:
        """What the next model request needs, from the conversation so far (messages in the
        library's neutral format: `{"role": "user"|"assistant", "content": [blocks]}`, the
        blocks as Anthropic's: `text`, `image`, `tool_use`, `tool_result`).

        Returns `append` (messages to add to the history before the request: the
        announcement of the tools, when it is due), `declarations` and `deferred` (the tools
        to offer), `guidance` (the system prompt's section); with `provider` ("anthropic",
        "openai-responses", "openai-chat") also `tools` and `request` in its own format
        (add the model's name and send it)."""
        return self._open().prepare(list(history), provider)

    def reply(self, body: Mapping[str, Any], provider: Provider) -> dict[str, Any]:
        """A provider's response body as `message` (the neutral message to append),
        `tool_calls` (to pass to `call`), `stop` and `skipped` (content it could not keep)."""
        return self._open().reply(dict(body), provider)

    async def call(self, tool_calls: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> Turn:
        """Runs a turn's tool calls (`{"id", "name", "input"}` each, as `reply` gives them,
        or one alone) through the same permission and hook funnel as an Exec's nested calls,
        and returns each result and the messages to append to the history."""
        calls = [tool_calls] if isinstance(tool_calls, Mapping) else list(tool_calls)
        turn = await self._open().call_turn([dict(call) for call in calls])
        return Turn(results=[result_from(report) for report in turn["results"]], messages=turn["messages"])

    async def close(self) -> None:
        """Closes the session: its MCP servers and their children are stopped. Using it
        afterwards raises `SessionError`; closing again does nothing."""
        if self._closed:
            return
        self._closed = True
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
    """A session for scripts and notebooks: `SyncSession(**options)` takes what
    `Session.open` takes, and each method blocks until it is done. It runs on an event loop of
    its own, in a thread (where its `async def` tools and callbacks run). Ctrl-C while an
    Exec runs aborts it."""

    def __init__(self, **options: Any) -> None:
        _not_in_a_running_loop()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="exec-host", daemon=True)
        self._thread.start()
        try:
            self._session: Session = self._run(Session.open(**options))
        except BaseException:
            self._stop()
            raise

    def _stop(self) -> None:
        """Stops the loop's thread and closes the loop."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

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

    @property
    def session(self) -> Session:
        """The asyncio session underneath (its coroutines run on this object's loop)."""
        return self._session

    @property
    def conversation(self) -> Optional[str]:
        """See `Session.conversation`."""
        return self._session.conversation

    @property
    def start_failures(self) -> list[str]:
        """See `Session.start_failures`."""
        return self._session.start_failures

    def exec(self, code: str, *, id: Optional[str] = None) -> ExecResult:
        """Runs `code` as one Exec and returns its result (see `Session.exec`)."""
        _not_in_a_running_loop()
        native = self._session._open()
        depth = _tools.exec_depth.get()
        if depth > _tools.MAX_EXEC_DEPTH:
            raise SessionError(f"an Exec started by a tool may nest at most {_tools.MAX_EXEC_DEPTH} deep")
        # Straight to the sandbox, this thread blocked with the GIL released; only its
        # `async def` tools go through the session's loop.
        return result_from(native.exec_blocking(code, depth, id, self._loop))

    def resume(self, handle: str, **answers: Any) -> ExecResult:
        """Continues a parked Exec (see `Session.resume`)."""
        return self._run(self._session.resume(handle, **answers))

    def parked(self, handle: str) -> Paused:
        """See `Session.parked`."""
        return self._run(self._session.parked(handle))

    def parked_execs(self) -> list[Paused]:
        """See `Session.parked_execs`."""
        return self._run(self._session.parked_execs())

    def discard(self, handle: str) -> None:
        """See `Session.discard`."""
        self._run(self._session.discard(handle))

    def declaration(self) -> dict[str, Any]:
        """See `Session.declaration`."""
        return self._session.declaration()

    def declaration_file(self) -> str:
        """See `Session.declaration_file`."""
        return self._session.declaration_file()

    def search(self, query: str, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """See `Session.search`."""
        return self._session.search(query, limit)

    def prepare(self, history: Sequence[Mapping[str, Any]], provider: Optional[Provider] = None) -> dict[str, Any]:
        """See `Session.prepare`."""
        return self._session.prepare(history, provider)

    def reply(self, body: Mapping[str, Any], provider: Provider) -> dict[str, Any]:
        """See `Session.reply`."""
        return self._session.reply(body, provider)

    def call(self, tool_calls: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> Turn:
        """See `Session.call`."""
        return self._run(self._session.call(tool_calls))

    def close(self) -> None:
        """Closes the session and stops its thread."""
        if not self._thread.is_alive():
            return
        try:
            self._run(self._session.close())
        finally:
            self._stop()

    def __enter__(self) -> "SyncSession":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()
