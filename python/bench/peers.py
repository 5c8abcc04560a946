"""exec-host from Python against its published peers, on the same workloads, in one run.

    python bench/peers.py [--quick]          (from python/)

It needs a venv of its own with exec-host (`pip install .`, which depends on nothing) and the
peers that bench/requirements.txt pins (`pip install --require-hashes --no-deps -r
bench/requirements.txt`); not the venv of requirements-dev.txt, whose pins of the packages
both need differ (websockets, for one). A peer that cannot
be imported (langchain-quickjs needs Python 3.11) is reported and left out. After the peers it
runs bench/parking.py (an Exec parked at a call that waits on a person after 10, 100 and
1,000 host calls, and resumed, against pydantic-monty's snapshots; `--no-parking` skips it) and
the workspace's Rust benchmark (`cargo run -p exec-host-bench`) for the same trivial Exec and
host calls through the Rust library, and prints the Python figures against them (`--no-rust`
skips it).

The systems, each driven through its own public API the way its users drive it:

- exec-host: `Session.exec` (and `SyncSession.exec`); the tools are plain Python functions.
  Every Exec runs in a fresh sandbox.
- pydantic-monty: a Python interpreter in Rust, run in a pool of `monty` worker processes
  (`AsyncMonty`, `Monty`); a session (`pool.checkout()`) is one worker's REPL, and host
  functions are its "external functions" (`feed_run(code, external_lookup=...)`).
- langchain-quickjs: the JavaScript REPL of LangChain agents (`CodeInterpreterMiddleware`).
  An agent calls its `eval` tool; with `ptc=[...]` the agent's tools are reachable from the
  script as `tools.<camelCase>(input)`. Here the middleware's own hooks set up a conversation
  (`before_agent`, `wrap_model_call`, which installs the tools) and the `eval` tool is invoked
  as a tool node would, with a `ToolRuntime`; no model is involved.
- quickjs-rs: the engine under langchain-quickjs (QuickJS in WebAssembly under wasmtime's
  Python binding), driven directly (`Runtime`, `Context.eval_async`, `Context.register`):
  the floor that langchain-quickjs adds its layers to.

Each workload runs a warm-up per system, then rounds in which every system runs a batch in
turn, so that the drifts of a noisy machine hit all systems alike; the table gives medians
over all samples (never means). Results are checked for their value; timings never are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional

import exec_host

# How many host calls the per-call rows make in one script. exec-host's Python API keeps the
# default limit of 200 tool calls per Exec, and langchain-quickjs allows 256 by default.
CALLS = 100
# How many Execs the concurrency rows start at once, and how long the waiting tool waits.
CONCURRENT = 100
WAIT_S = 0.010


# The host functions every system gets: the same Python code for all.


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


async def add_async(a: int, b: int) -> int:
    """Adds two numbers, as a coroutine."""
    return a + b


async def nap() -> int:
    """Waits 10 ms, then answers 1."""
    await asyncio.sleep(WAIT_S)
    return 1


# The workloads (rows of the table).


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    # Each sample is divided by this: the per-call rows time a script making CALLS calls.
    per: int
    # Samples per round and system, in a full run.
    reps: int
    # Printed in ms rather than µs.
    in_ms: bool = False
    # Runs outside any event loop (the sync APIs).
    sync: bool = False


ROWS = [
    Row("trivial", "trivial Exec (1 + 1), end to end", 1, 100),
    Row("trivial_fresh", "trivial Exec, a fresh sandbox each time", 1, 60),
    Row("call_one", "one host call, add(2, 40), end to end", 1, 60),
    Row("call_loop", f"host call round trip ({CALLS} in a loop), per call", CALLS, 12),
    Row("call_loop_async", f"the same, an async def function ({CALLS} in a loop), per call", CALLS, 12),
    Row("concurrent", f"{CONCURRENT} concurrent Execs, one add() each, wall", 1, 4, in_ms=True),
    Row("concurrent_wait", f"{CONCURRENT} concurrent Execs, each awaiting a 10 ms tool, wall", 1, 3, in_ms=True),
    Row("sync_trivial", "trivial Exec through the sync API", 1, 100, sync=True),
]

# What each script returns. A wrong answer, or an error, leaves that system's cell of the row
# "failed" and says why below the table; it is the only check made (timings never are).
SUM = sum(i + 1 for i in range(CALLS))
EXPECTED = {
    "trivial": 2,
    "trivial_fresh": 2,
    "call_one": 42,
    "call_loop": SUM,
    "call_loop_async": SUM,
    "concurrent": [42] * CONCURRENT,
    "concurrent_wait": [1] * CONCURRENT,
    "sync_trivial": 2,
}

# The same scripts in each language.
# `var`, not `let`: a REPL (the peers but exec-host) keeps its globals from one script to the next.
JS_LOOP = "var t = 0; for (let i = 0; i < %d; i++) t += await tools.%s({a: i, b: 1}); %s t"
PY_LOOP = "t = 0\nfor i in range(%d):\n    t += %s(i, 1)\nt"

Workload = Callable[[], Awaitable[Any]]
SyncWorkload = Callable[[], Any]


class System:
    """One system under test: opens its resources, offers a function per row it can run,
    closes. `notes` says how it was driven where the table cannot."""

    name = ""
    # The distributions whose versions the report gives.
    distributions: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.notes: list[str] = []

    async def open(self) -> dict[str, Workload]:
        raise NotImplementedError

    async def close(self) -> None:
        pass

    def open_sync(self) -> dict[str, SyncWorkload]:
        return {}

    def close_sync(self) -> None:
        pass


class ExecHost(System):
    name = "exec-host"
    distributions = ("exec-host",)

    async def open(self) -> dict[str, Workload]:
        self.session = await exec_host.Session.open(
            tools=[add, add_async, nap],
            settings={"permissions": {"allow": ["add", "add_async", "nap"]}},
        )
        exec_ = self.session.exec

        async def run(code: str) -> Any:
            result = await exec_(code)
            if not result.ok:
                raise RuntimeError(result.text)
            return result.value

        async def trivial() -> Any:
            return await run("return 1 + 1")

        async def call_one() -> Any:
            return await run("return await tools.add({a: 2, b: 40})")

        async def call_loop() -> Any:
            return await run(JS_LOOP % (CALLS, "add", "return"))

        async def call_loop_async() -> Any:
            return await run(JS_LOOP % (CALLS, "add_async", "return"))

        async def concurrent() -> Any:
            return await asyncio.gather(*(call_one() for _ in range(CONCURRENT)))

        async def concurrent_wait() -> Any:
            return await asyncio.gather(*(run("return await tools.nap({})") for _ in range(CONCURRENT)))

        self.notes.append("every Exec is a fresh sandbox: `trivial_fresh` is the same path as `trivial`")
        self.notes.append(f"the {CONCURRENT} concurrent Execs share one Session")
        return {
            "trivial": trivial,
            "trivial_fresh": trivial,
            "call_one": call_one,
            "call_loop": call_loop,
            "call_loop_async": call_loop_async,
            "concurrent": concurrent,
            "concurrent_wait": concurrent_wait,
        }

    async def close(self) -> None:
        await self.session.close()

    def open_sync(self) -> dict[str, SyncWorkload]:
        self.sync_session = exec_host.SyncSession(tools=[add], settings={"permissions": {"allow": ["add"]}})
        return {"sync_trivial": lambda: self.sync_session.exec("return 1 + 1").value}

    def close_sync(self) -> None:
        self.sync_session.close()


class Monty(System):
    name = "pydantic-monty"
    distributions = ("pydantic-monty",)

    # Sessions count host round trips for their whole life (not per feed) against
    # `max_suspensions`, 1000 by default and never unlimited: a long-lived session needs more.
    LIMITS = {"max_suspensions": 10**9}

    async def open(self) -> dict[str, Workload]:
        import pydantic_monty

        self.stack = contextlib.AsyncExitStack()
        # Two workers kept warm; up to one per concurrent Exec, started by the warm-up of the
        # concurrency rows and then reused (a session holds its worker process).
        self.pool = await self.stack.enter_async_context(
            pydantic_monty.AsyncMonty(min_processes=2, max_processes=CONCURRENT)
        )
        session = await self.stack.enter_async_context(self.pool.checkout(limits=self.LIMITS))
        externals = {"add": add, "add_async": add_async, "nap": nap}
        feed = session.feed_run

        async def in_new_session(code: str) -> Any:
            async with self.pool.checkout() as fresh:
                return await fresh.feed_run(code, external_lookup=externals)

        async def trivial() -> Any:
            return await feed("1 + 1")

        async def trivial_fresh() -> Any:
            return await in_new_session("1 + 1")

        async def call_one() -> Any:
            return await feed("add(2, 40)", external_lookup=externals)

        async def call_loop() -> Any:
            return await feed(PY_LOOP % (CALLS, "add"), external_lookup=externals)

        async def call_loop_async() -> Any:
            return await feed(PY_LOOP % (CALLS, "await add_async"), external_lookup=externals)

        async def concurrent() -> Any:
            return await asyncio.gather(*(in_new_session("add(2, 40)") for _ in range(CONCURRENT)))

        async def concurrent_wait() -> Any:
            return await asyncio.gather(*(in_new_session("await nap()") for _ in range(CONCURRENT)))

        self.notes.append(
            "rows but `trivial_fresh` and the concurrent ones reuse one checked-out session (a warm "
            "REPL whose state persists); `trivial_fresh` and each concurrent Exec check a session out"
        )
        self.notes.append(
            f"AsyncMonty(min_processes=2, max_processes={CONCURRENT}): a worker process per "
            "concurrent session, started during warm-up"
        )
        return {
            "trivial": trivial,
            "trivial_fresh": trivial_fresh,
            "call_one": call_one,
            "call_loop": call_loop,
            "call_loop_async": call_loop_async,
            "concurrent": concurrent,
            "concurrent_wait": concurrent_wait,
        }

    async def close(self) -> None:
        await self.stack.aclose()

    def open_sync(self) -> dict[str, SyncWorkload]:
        import pydantic_monty

        self.sync_stack = contextlib.ExitStack()
        pool = self.sync_stack.enter_context(pydantic_monty.Monty(min_processes=1, max_processes=1))
        session = self.sync_stack.enter_context(pool.checkout(limits=self.LIMITS))
        return {"sync_trivial": lambda: session.feed_run("1 + 1")}

    def close_sync(self) -> None:
        self.sync_stack.close()


class LangchainQuickJS(System):
    name = "langchain-quickjs"
    distributions = ("langchain-quickjs", "langchain-core")

    def __init__(self) -> None:
        super().__init__()
        from langchain_core.tools import StructuredTool

        # The agent's tools, exposed to the REPL as tools.add, tools.addAsync and tools.nap.
        self.tools = [
            StructuredTool.from_function(func=add),
            StructuredTool.from_function(coroutine=add_async),
            StructuredTool.from_function(coroutine=nap),
        ]
        # The conversations opened, to end each one (which frees its REPL and thread).
        self.open_conversations: list[tuple[Any, dict[str, Any]]] = []

    def middleware(self, **options: Any) -> Any:
        import warnings

        from langchain_quickjs import CodeInterpreterMiddleware

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "in beta"
            return CodeInterpreterMiddleware(ptc=list(self.tools), **options)

    def conversation(self, middleware: Any) -> Callable[[str], Any]:
        """Opens a conversation as an agent would (its REPL slot, the tools installed by the
        model-call hook) and gives the tool input that runs `code` in it."""
        from langchain.agents.middleware.types import ModelRequest
        from langchain.tools import ToolRuntime

        state: dict[str, Any] = {"messages": []}
        state.update(middleware.before_agent(state, None) or {})
        request = ModelRequest(model=None, messages=[], tools=list(self.tools), state=state)
        middleware.wrap_model_call(request, lambda _request: None)
        self.open_conversations.append((middleware, state))
        runtime = ToolRuntime(
            state=state, context=None, config={}, stream_writer=lambda _chunk: None, tool_call_id="bench", store=None
        )
        return lambda code: {"code": code, "runtime": runtime}

    @staticmethod
    def value(message: Any) -> Any:
        """The value an `eval` answered, from the text the model would read."""
        text = message.content
        if not (text.startswith("<result>") and text.endswith("</result>")):
            raise RuntimeError(text)
        return json.loads(text[len("<result>") : -len("</result>")])

    async def open(self) -> dict[str, Workload]:
        # mode="thread" (the default) keeps one REPL per conversation; mode="call" gives every
        # eval a fresh one.
        thread, call = self.middleware(), self.middleware(mode="call")
        eval_, eval_fresh = thread.tools[0].ainvoke, call.tools[0].ainvoke
        one, fresh = self.conversation(thread), self.conversation(call)
        # An eval on a REPL that is already evaluating fails, so concurrent evals need a
        # conversation each.
        many = [self.conversation(thread) for _ in range(CONCURRENT)]
        value = self.value

        async def trivial() -> Any:
            return value(await eval_(one("1 + 1")))

        async def trivial_fresh() -> Any:
            return value(await eval_fresh(fresh("1 + 1")))

        async def call_one() -> Any:
            return value(await eval_(one("await tools.add({a: 2, b: 40})")))

        async def call_loop() -> Any:
            return value(await eval_(one(JS_LOOP % (CALLS, "add", ""))))

        async def call_loop_async() -> Any:
            return value(await eval_(one(JS_LOOP % (CALLS, "addAsync", ""))))

        async def concurrent() -> Any:
            code = "await tools.add({a: 2, b: 40})"
            return [value(m) for m in await asyncio.gather(*(eval_(c(code)) for c in many))]

        async def concurrent_wait() -> Any:
            code = "await tools.nap({})"
            return [value(m) for m in await asyncio.gather(*(eval_(c(code)) for c in many))]

        self.notes.append(
            "the `eval` tool of CodeInterpreterMiddleware(ptc=[tools]) invoked with a ToolRuntime; "
            "each conversation's REPL has its own thread, event loop and QuickJS context"
        )
        self.notes.append(
            "rows but `trivial_fresh` reuse one conversation's REPL (mode='thread'); `trivial_fresh` "
            "uses mode='call', a new context per eval"
        )
        self.notes.append(
            f"the concurrent rows use {CONCURRENT} conversations opened beforehand (not timed): one REPL "
            "evaluates one script at a time"
        )
        self.notes.append(
            "tools run on the caller's event loop through LangChain's `arun` (a sync one in the default "
            "thread pool)"
        )
        return {
            "trivial": trivial,
            "trivial_fresh": trivial_fresh,
            "call_one": call_one,
            "call_loop": call_loop,
            "call_loop_async": call_loop_async,
            "concurrent": concurrent,
            "concurrent_wait": concurrent_wait,
        }

    async def close(self) -> None:
        # Ending each conversation closes its REPL and stops its thread. A middleware left with
        # open REPLs hangs the interpreter's exit (its __del__ waits on a stopped thread).
        conversations, self.open_conversations = self.open_conversations, []
        for middleware, state in conversations:
            await middleware.aafter_agent(state, None)

    def open_sync(self) -> dict[str, SyncWorkload]:
        middleware = self.middleware()
        invoke, one = middleware.tools[0].invoke, self.conversation(middleware)
        return {"sync_trivial": lambda: self.value(invoke(one("1 + 1")))}

    def close_sync(self) -> None:
        conversations, self.open_conversations = self.open_conversations, []
        for middleware, state in conversations:
            middleware.after_agent(state, None)


class QuickJSRs(System):
    name = "quickjs-rs"
    distributions = ("quickjs-rs", "wasmtime")

    def context(self) -> Any:
        """A context with the host functions as globals: add, addAsync, nap."""
        context = self.runtime.new_context()
        context.register("add", add)
        context.register("addAsync", add_async)
        context.register("nap", nap)
        return context

    async def open(self) -> dict[str, Workload]:
        import quickjs_rs

        # Runtimes and contexts belong to the thread that made them: this one, the loop's.
        self.runtime = quickjs_rs.Runtime()
        one = self.context()
        # One context evaluates one script at a time, so concurrent evals need one each.
        many = [self.context() for _ in range(CONCURRENT)]
        eval_ = one.eval_async

        async def trivial() -> Any:
            return await eval_("1 + 1")

        async def trivial_fresh() -> Any:
            context = self.context()
            try:
                return await context.eval_async("1 + 1")
            finally:
                context.close()

        async def call_one() -> Any:
            return await eval_("add(2, 40)")

        async def call_loop() -> Any:
            return await eval_("var t = 0; for (let i = 0; i < %d; i++) t += add(i, 1); t" % CALLS)

        async def call_loop_async() -> Any:
            return await eval_("var t = 0; for (let i = 0; i < %d; i++) t += await addAsync(i, 1); t" % CALLS)

        async def concurrent() -> Any:
            return await asyncio.gather(*(c.eval_async("add(2, 40)") for c in many))

        async def concurrent_wait() -> Any:
            return await asyncio.gather(*(c.eval_async("await nap()") for c in many))

        self.notes.append(
            "a sync host function is called synchronously (no Promise); rows but `trivial_fresh` reuse "
            f"one context; the concurrent rows use {CONCURRENT} contexts made beforehand (not timed)"
        )
        self.contexts = [one, *many]
        return {
            "trivial": trivial,
            "trivial_fresh": trivial_fresh,
            "call_one": call_one,
            "call_loop": call_loop,
            "call_loop_async": call_loop_async,
            "concurrent": concurrent,
            "concurrent_wait": concurrent_wait,
        }

    async def close(self) -> None:
        for context in self.contexts:
            context.close()
        self.runtime.close()

    def open_sync(self) -> dict[str, SyncWorkload]:
        import quickjs_rs

        self.sync_runtime = quickjs_rs.Runtime()
        self.sync_context = self.sync_runtime.new_context()
        return {"sync_trivial": lambda: self.sync_context.eval("1 + 1")}

    def close_sync(self) -> None:
        self.sync_context.close()
        self.sync_runtime.close()


def peers() -> tuple[list[System], dict[str, str]]:
    """The peers that can run here, and why the others cannot."""
    found: list[System] = []
    missing: dict[str, str] = {}
    for make, module in ((Monty, "pydantic_monty"), (LangchainQuickJS, "langchain_quickjs"), (QuickJSRs, "quickjs_rs")):
        try:
            __import__(module)
            found.append(make())
        except ImportError as error:
            missing[make.name] = f"cannot be imported on Python {platform.python_version()}: {error}"
    return found, missing


# Measuring.


class Samples:
    """Seconds per sample, for each (row, system)."""

    def __init__(self) -> None:
        self.taken: dict[tuple[str, str], list[float]] = {}
        self.failed: dict[tuple[str, str], str] = {}

    def add(self, row: Row, system: str, seconds: float) -> None:
        self.taken.setdefault((row.key, system), []).append(seconds / row.per)

    def fail(self, row: Row, system: str, error: Exception) -> None:
        """The row failed for this system: its samples are dropped and the error kept."""
        self.taken.pop((row.key, system), None)
        self.failed[(row.key, system)] = f"{type(error).__name__}: {error}"

    def quartiles_us(self, row: Row, system: str) -> Optional[tuple[float, float, float]]:
        taken = self.taken.get((row.key, system))
        if not taken:
            return None
        if len(taken) == 1:
            return taken[0] * 1e6, taken[0] * 1e6, taken[0] * 1e6
        q1, median, q3 = statistics.quantiles(taken, n=4, method="inclusive")
        return q1 * 1e6, median * 1e6, q3 * 1e6


def check(row: Row, system: str, value: Any) -> None:
    if value != EXPECTED[row.key]:
        shown = repr(value)[:200]
        raise RuntimeError(f"{system} answered {shown} to `{row.key}`, not {EXPECTED[row.key]!r}")


async def measure_async(row: Row, offered: dict[str, dict[str, Workload]], samples: Samples, rounds: int, reps: int) -> None:
    """Warm-up, then `rounds` rounds of `reps` samples per system, systems taking turns."""
    clock = time.perf_counter
    running: dict[str, Workload] = {}
    for system, workloads in offered.items():
        workload = workloads.get(row.key)
        if workload is None:
            continue
        try:
            for _ in range(max(2, reps // 4)):
                check(row, system, await workload())
        except Exception as error:  # the row fails for this system; the others go on
            samples.fail(row, system, error)
            continue
        running[system] = workload
    for _ in range(rounds):
        for system, workload in list(running.items()):
            try:
                for _ in range(reps):
                    start = clock()
                    await workload()
                    samples.add(row, system, clock() - start)
            except Exception as error:
                samples.fail(row, system, error)
                del running[system]


def measure_sync(row: Row, offered: dict[str, dict[str, SyncWorkload]], samples: Samples, rounds: int, reps: int) -> None:
    """The same, for the sync APIs, with no event loop running."""
    clock = time.perf_counter
    running: dict[str, SyncWorkload] = {}
    for system, workloads in offered.items():
        workload = workloads.get(row.key)
        if workload is None:
            continue
        try:
            for _ in range(max(2, reps // 4)):
                check(row, system, workload())
        except Exception as error:
            samples.fail(row, system, error)
            continue
        running[system] = workload
    for _ in range(rounds):
        for system, workload in list(running.items()):
            try:
                for _ in range(reps):
                    start = clock()
                    workload()
                    samples.add(row, system, clock() - start)
            except Exception as error:
                samples.fail(row, system, error)
                del running[system]


async def run_async_rows(systems: list[System], samples: Samples, rounds: int, scale: float, failed: dict[str, str]) -> None:
    offered: dict[str, dict[str, Workload]] = {}
    opened: list[System] = []
    try:
        for system in systems:
            try:
                offered[system.name] = await system.open()
                opened.append(system)
            except Exception as error:
                failed[system.name] = f"failed to open: {type(error).__name__}: {error}"
        for row in ROWS:
            if not row.sync:
                await measure_async(row, offered, samples, rounds, max(1, round(row.reps * scale)))
    finally:
        for system in opened:
            await system.close()


def run_sync_rows(systems: list[System], samples: Samples, rounds: int, scale: float, failed: dict[str, str]) -> None:
    offered: dict[str, dict[str, SyncWorkload]] = {}
    opened: list[System] = []
    try:
        for system in systems:
            try:
                offered[system.name] = system.open_sync()
                opened.append(system)
            except Exception as error:
                failed.setdefault(system.name, f"its sync API failed to open: {type(error).__name__}: {error}")
        for row in ROWS:
            if row.sync:
                measure_sync(row, offered, samples, rounds, max(1, round(row.reps * scale)))
    finally:
        for system in opened:
            system.close_sync()


# Reporting.


def shown(us: float, in_ms: bool) -> str:
    value, unit = (us / 1000, "ms") if in_ms else (us, "µs")
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f} {unit}"


def report(systems: list[System], samples: Samples, failed: dict[str, str], quick: bool, loads: list[float]) -> dict[str, Any]:
    names = [system.name for system in systems]
    head = ["median", *names, "best peer / exec-host"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    medians: dict[str, dict[str, float]] = {}
    quartiles: dict[str, dict[str, list[float]]] = {}
    for row in ROWS:
        cells = [row.label]
        for name in names:
            q = samples.quartiles_us(row, name)
            if q is not None:
                medians.setdefault(row.key, {})[name] = round(q[1], 2)
                quartiles.setdefault(row.key, {})[name] = [round(q[0], 2), round(q[2], 2)]
                cells.append(shown(q[1], row.in_ms))
            else:
                cells.append("failed" if (row.key, name) in samples.failed else "-")
        ours = medians.get(row.key, {}).get(ExecHost.name)
        theirs = {name: v for name, v in medians.get(row.key, {}).items() if name != ExecHost.name}
        if ours and theirs:
            best = min(theirs, key=lambda name: theirs[name])
            cells.append(f"{theirs[best] / ours:.2f}x ({best})")
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")

    versions = {}
    for system in systems:
        for distribution in system.distributions:
            with contextlib.suppress(importlib.metadata.PackageNotFoundError):
                versions[distribution] = importlib.metadata.version(distribution)
    print(
        f"\nexec-host against its peers from Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load {loads[0]:.2f} before and {loads[1]:.2f} after{', --quick' if quick else ''}"
    )
    print("versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    print()
    print("\n".join(lines))
    print("\nA ratio above 1 means exec-host is faster than the fastest peer in that row.")
    print(f"Per-call rows divide a script of {CALLS} calls by {CALLS}, so they include 1/{CALLS} of the script's own cost.")
    for system in systems:
        for note in system.notes:
            print(f"- {system.name}: {note}")
    for name, why in failed.items():
        print(f"- {name}: {why}")
    for (row, name), why in samples.failed.items():
        print(f"- {name} failed `{row}`: {why}")
    return {
        "bench": "python-peers",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load": loads,
        "quick": quick,
        "calls_per_script": CALLS,
        "versions": versions,
        "median_us": medians,
        "quartiles_us": quartiles,
        "samples": {f"{row}/{name}": len(taken) for (row, name), taken in samples.taken.items()},
        "failed": {**failed, **{f"{row}/{name}": why for (row, name), why in samples.failed.items()}},
    }


def rust_library(quick: bool) -> Optional[dict[str, float]]:
    """The same trivial Exec and sequential host calls through the Rust library, measured now
    by the workspace's own benchmark (`exec-host-bench`, built on demand), so the Python
    figures can be read against it: the issue's goal is a Python trivial Exec within 2x."""
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.jsonl")
        command = ["cargo", "run", "--release", "--quiet", "-p", "exec-host-bench", "--", "--only=trivial,calls_seq_1000", "--record", record]
        if quick:
            command.append("--quick")
        done = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(record):
            print(f"(the Rust library's benchmark did not run: {done.stderr.strip()[-400:]})", file=sys.stderr)
            return None
        with open(record) as lines:
            line = json.loads(lines.read().splitlines()[-1])
    also = line.get("also", {})
    return {
        "trivial_us": float(line["median_us"]["trivial"]),
        "per_call_us": float(also.get("calls_seq_1000.per_call_us", line["median_us"]["calls_seq_1000"] / 1000)),
    }


def against_rust(rust: dict[str, float], figures: dict[str, Any]) -> None:
    """Prints the Python figures beside the Rust library's, and their ratios."""
    ours = figures["median_us"]
    trivial = ours.get("trivial", {}).get(ExecHost.name)
    per_call = ours.get("call_loop", {}).get(ExecHost.name)
    print("\nexec-host from Python against the same work through the Rust library, this run:")
    print("| median | from Python | Rust library | Python / Rust |")
    print("|---|---:|---:|---:|")
    if trivial:
        print(f"| trivial Exec, end to end | {shown(trivial, False)} | {shown(rust['trivial_us'], False)} | {trivial / rust['trivial_us']:.2f}x |")
    if per_call:
        print(
            f"| host call round trip, per call (a Python function / a Rust tool) | {shown(per_call, False)} "
            f"| {shown(rust['per_call_us'], False)} | {per_call / rust['per_call_us']:.2f}x |"
        )
    figures["rust_library_us"] = rust


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and samples: a smoke run")
    parser.add_argument("--only", metavar="PEER,...", help="run exec-host and only these peers (none: exec-host alone)")
    parser.add_argument("--no-rust", action="store_true", help="skip the Rust library's figures (they need cargo)")
    parser.add_argument("--no-parking", action="store_true", help="skip parking against pydantic-monty's snapshots (bench/parking.py)")
    options = parser.parse_args()
    quick = options.quick
    rounds, scale = (2, 0.2) if quick else (5, 1.0)

    found, failed = peers()
    if options.only is not None:
        chosen = {name.strip() for name in options.only.split(",") if name.strip()}
        found = [system for system in found if system.name in chosen]
        failed = {name: why for name, why in failed.items() if name in chosen}
    systems: list[System] = [ExecHost(), *found]
    samples = Samples()
    loads = [os.getloadavg()[0]]
    asyncio.run(run_async_rows(systems, samples, rounds, scale, failed))
    run_sync_rows(systems, samples, rounds, scale, failed)
    loads.append(os.getloadavg()[0])
    figures = report(systems, samples, failed, quick, loads)
    if not options.no_parking and any(system.name == Monty.name for system in systems):
        import parking

        figures["parking"] = asyncio.run(parking.measure(quick))
    rust = None if options.no_rust else rust_library(quick)
    if rust is not None:
        against_rust(rust, figures)
    print(json.dumps(figures, ensure_ascii=False), flush=True)
    sys.stderr.flush()
    if "pydantic_monty" in sys.modules:
        # pydantic-monty's runtime threads can take the GIL while the interpreter finalizes,
        # which aborts the process (SIGABRT in PyThread_exit_thread) in some runs. Everything
        # is closed and printed: leave without finalizing.
        os._exit(0)


if __name__ == "__main__":
    main()
