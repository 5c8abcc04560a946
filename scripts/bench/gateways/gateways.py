"""`exec-host serve` against FastMCP's code mode, the other code-mode gateway, in one run.

    scripts/bench/gateways/run [--quick] [--record FILE]

(`run` makes this folder's venv from requirements.txt, pinned with hashes, and calls this file
with the workspace's release binaries.)

Both gateways stand in front of the same downstream MCP server (the workspace's
`fixture-mcp-server`, over stdio, spawned by each gateway) and are driven by the same client,
the official MCP Python SDK, over streamable HTTP on loopback, with the SDK's default
negotiation. Each is set up the way its documentation shows:

- exec-host: `exec-host serve --http` with the server in `--mcp-config` and its tools allowed
  (`--allow mcp__fixture`), room for a hundred clients (`--concurrency 128`); the script is
  JavaScript, `tools.mcp__fixture__add(...)`. Every Exec runs in a fresh sandbox.
- FastMCP: `create_proxy(config)` with the `CodeMode` transform (`fastmcp_gateway.py`); the
  script is Python run by pydantic-monty, `await call_tool("add", ...)`.

The rows:

- a trivial Exec (`1 + 1`), sequential calls on one connection: median and p99;
- a script of 10 nested calls of the downstream `add`, sequential: median and p99;
- 100 concurrent clients (each its own connection) making trivial Execs for a while:
  throughput and p99;
- the gateway's peak resident memory over the whole run, its own processes and workers (the
  downstream server left out), and at rest after start.

Each row runs in both protocol revisions: the SDK's default negotiation (2026-07-28 with both
gateways) and 2025-11-25 (a session per connection). Each gateway runs alone on the machine
(FastMCP makes and ends worker processes per Exec, and they take CPU from whatever runs beside
them), in passes that alternate the two, so the drifts of a noisy machine hit both alike. The
client's own work is part of every figure, the same for both. Results are checked for their
value; timings never are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import history  # noqa: E402  (scripts/bench/history.py)

CLIENTS = 100


@dataclass
class Gateway:
    name: str
    command: list[str]
    # The tool that runs scripts, and the scripts of each workload.
    tool: str
    trivial: str
    nested: str
    env: dict[str, str] = field(default_factory=dict)
    # The line of stderr that gives the URL starts with this; when empty, the URL is the
    # first line of stdout that starts with `http`.
    url_prefix: str = ""
    process: Optional[subprocess.Popen] = None
    url: str = ""
    rss_peak_kib: int = 0
    _sampling: bool = False

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **self.env},
        )
        stream = self.process.stderr if self.url_prefix else self.process.stdout
        for line in stream:
            if self.url_prefix and line.startswith(self.url_prefix):
                self.url = line[len(self.url_prefix) :].strip()
                break
            if not self.url_prefix and line.startswith("http"):
                self.url = line.strip()
                break
        else:
            raise RuntimeError(f"{self.name} ended before it served: {self.process.wait()}")
        # Keep both pipes drained so the gateway never blocks on a full one.
        for pipe in (self.process.stdout, self.process.stderr):
            threading.Thread(target=lambda p=pipe: [None for _ in p], daemon=True).start()
        self._sampling = True
        threading.Thread(target=self._sample_rss, daemon=True).start()

    def tree_rss_kib(self) -> int:
        """Resident memory of the gateway and its descendants, the downstream server left out."""
        total, queue = 0, [self.process.pid]
        while queue:
            pid = queue.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as file:
                    argv0 = file.read().split(b"\0", 1)[0]
                children = []
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as file:
                        children += [int(child) for child in file.read().split()]
                queue += children
                if argv0.endswith(b"fixture-mcp-server"):
                    continue
                with open(f"/proc/{pid}/status") as file:
                    for line in file:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
        return total

    def _sample_rss(self) -> None:
        while self._sampling and self.process.poll() is None:
            self.rss_peak_kib = max(self.rss_peak_kib, self.tree_rss_kib())
            time.sleep(0.02)

    def stop(self) -> None:
        self._sampling = False
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# The protocol revisions the rows run in: the SDK's default negotiation (2026-07-28 with both
# gateways) and the revision with sessions.
MODES = {"2026-07-28": "auto", "2025-11-25": "legacy"}


def connect(url: str, mode: str) -> Client:
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=120)), mode=mode)


async def call(client, gateway: Gateway, code: str, expect: str) -> float:
    started = time.perf_counter()
    result = await client.call_tool(gateway.tool, {"code": code})
    elapsed = time.perf_counter() - started
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error or not text.strip().startswith(expect):
        raise RuntimeError(f"{gateway.name} answered {text!r} (error: {result.is_error}), not {expect}")
    return elapsed * 1e6


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def sequential(gateway: Gateway, mode: str, code: str, expect: str, calls: int) -> list[float]:
    """`calls` calls of `code` in turn on one connection, after a warm-up."""
    async with connect(gateway.url, mode) as client:
        for _ in range(max(5, calls // 10)):
            await call(client, gateway, code, expect)
        return [await call(client, gateway, code, expect) for _ in range(calls)]


async def concurrent(gateway: Gateway, mode: str, seconds: float) -> tuple[int, float, list[float]]:
    """`CLIENTS` connections, all open before the clock starts, each making trivial Execs in a
    loop for `seconds`: the calls made, the wall time and each call's latency."""
    latencies: list[float] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(connect(gateway.url, mode)) for _ in range(CLIENTS)]
        await asyncio.gather(*(call(client, gateway, gateway.trivial, "2") for client in clients))
        deadline = time.perf_counter() + seconds

        async def loop(client) -> None:
            while time.perf_counter() < deadline:
                latencies.append(await call(client, gateway, gateway.trivial, "2"))

        started = time.perf_counter()
        await asyncio.gather(*(loop(client) for client in clients))
        wall = time.perf_counter() - started
    return len(latencies), wall, latencies


@dataclass
class Figures:
    """Every sample of one gateway, over all passes."""

    trivial: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    nested: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    many_calls: dict[str, int] = field(default_factory=lambda: {m: 0 for m in MODES})
    many_wall: dict[str, float] = field(default_factory=lambda: {m: 0.0 for m in MODES})
    many_latencies: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    rest_kib: list[int] = field(default_factory=list)


def measure(gateway: Gateway, figures: Figures, calls: int, seconds: float) -> None:
    """One pass over `gateway`, alone on the machine: started, measured, stopped. (Run side by
    side, FastMCP's worker processes, made and ended per Exec, take CPU from the other.)"""
    gateway.start()
    try:
        time.sleep(1.0)
        figures.rest_kib.append(gateway.tree_rss_kib())
        for revision, mode in MODES.items():
            figures.trivial[revision] += asyncio.run(sequential(gateway, mode, gateway.trivial, "2", calls))
            figures.nested[revision] += asyncio.run(sequential(gateway, mode, gateway.nested, "55", calls // 2))
            made, wall, latencies = asyncio.run(concurrent(gateway, mode, seconds))
            figures.many_calls[revision] += made
            figures.many_wall[revision] += wall
            figures.many_latencies[revision] += latencies
    finally:
        gateway.stop()


def fmt_us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 10_000 else f"{us:.0f} µs"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exec-host", required=True, help="the exec-host binary")
    parser.add_argument("--fixture", required=True, help="the fixture-mcp-server binary")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--record", help="append this run's figures to this JSON-lines file")
    args = parser.parse_args()

    work = tempfile.TemporaryDirectory(prefix="gateways-")
    config = os.path.join(work.name, "mcp.json")
    with open(config, "w") as file:
        server = {"command": os.path.abspath(args.fixture), "args": [], "env": {"FIXTURE_WELL_FORMED": "1"}}
        json.dump({"mcpServers": {"fixture": server}}, file)
    workspace = os.path.join(work.name, "workspace")
    os.mkdir(workspace)

    js_nested = "let t = 0;\nfor (let i = 0; i < 10; i++) t += (await tools.mcp__fixture__add({ a: i, b: 1 })).sum;\nreturn t;"
    py_nested = "t = 0\nfor i in range(10):\n    t += (await call_tool('add', {'a': i, 'b': 1}))['sum']\nreturn int(t)"
    gateways = [
        Gateway(
            name="exec-host",
            command=[
                args.exec_host, "serve", "--http", "127.0.0.1:0", "--workspace", workspace,
                "--mcp-config", config, "--allow", "mcp__fixture",
                "--concurrency", "128", "--max-sessions", "512",
            ],
            env={"EXEC_HOST_CACHE_DIR": os.path.join(work.name, "cache")},
            url_prefix="exec-host: serving MCP at ",
            tool="Exec",
            trivial="return 1 + 1",
            nested=js_nested,
        ),
        Gateway(
            name="fastmcp-code-mode",
            command=[sys.executable, os.path.join(HERE, "fastmcp_gateway.py"), config],
            tool="execute",
            trivial="return 1 + 1",
            nested=py_nested,
        ),
    ]
    quick = args.quick
    passes, calls, seconds = (1, 100, 3.0) if quick else (3, 200, 8.0)
    figures = {gateway.name: Figures() for gateway in gateways}
    for _ in range(passes):
        for gateway in gateways:
            measure(gateway, figures[gateway.name], calls, seconds)

    ours, peer = gateways[0].name, gateways[1].name
    a, b = figures[ours], figures[peer]
    versions = {d: importlib.metadata.version(d) for d in ("fastmcp", "pydantic-monty", "mcp")}
    print(
        f"# exec-host serve against FastMCP's code mode ({datetime.date.today()}; fastmcp {versions['fastmcp']}, "
        f"pydantic-monty {versions['pydantic-monty']}; client: the MCP Python SDK {versions['mcp']}; "
        f"{os.cpu_count()} cores; {passes} passes{'; quick' if quick else ''})\n"
    )
    print(f"| | {ours} | {peer} | {peer} / {ours} |")
    print("|---|---:|---:|---:|")

    def row(label: str, ours_value: float, peer_value: float, show=fmt_us, higher_is_better: bool = False) -> None:
        ratio = ours_value / peer_value if higher_is_better else peer_value / ours_value
        print(f"| {label} | {show(ours_value)} | {show(peer_value)} | {ratio:.1f}x |")

    per_s = lambda f, revision: f.many_calls[revision] / f.many_wall[revision]
    for revision in MODES:
        row(f"trivial Exec (1 + 1), median, {revision}", statistics.median(a.trivial[revision]), statistics.median(b.trivial[revision]))
        row(f"trivial Exec, p99, {revision}", quantile(a.trivial[revision], 0.99), quantile(b.trivial[revision], 0.99))
        row(f"10 nested calls in one script, median, {revision}", statistics.median(a.nested[revision]), statistics.median(b.nested[revision]))
        row(f"10 nested calls, p99, {revision}", quantile(a.nested[revision], 0.99), quantile(b.nested[revision], 0.99))
        row(
            f"{CLIENTS} concurrent clients, trivial Execs per second (ours / peer), {revision}",
            per_s(a, revision), per_s(b, revision), show=lambda v: f"{v:.0f}", higher_is_better=True,
        )
        row(f"{CLIENTS} concurrent clients, p99, {revision}", quantile(a.many_latencies[revision], 0.99), quantile(b.many_latencies[revision], 0.99))
    mib = lambda kib: f"{kib / 1024:.0f} MiB"
    row("peak resident memory, workers included", gateways[0].rss_peak_kib, gateways[1].rss_peak_kib, show=mib)
    row("resident memory at rest", statistics.median(a.rest_kib), statistics.median(b.rest_kib), show=mib)

    if args.record:
        modern = "2026-07-28"
        median_us = {
            "gateway_trivial": round(statistics.median(a.trivial[modern]), 1),
            "gateway_nested_10": round(statistics.median(a.nested[modern]), 1),
        }
        also = {
            "gateway_trivial.p99_us": round(quantile(a.trivial[modern], 0.99), 1),
            "gateway_trivial.fastmcp_us": round(statistics.median(b.trivial[modern]), 1),
            "gateway_nested_10.p99_us": round(quantile(a.nested[modern], 0.99), 1),
            "gateway_nested_10.fastmcp_us": round(statistics.median(b.nested[modern]), 1),
            "gateway_100_clients.execs_per_s": round(per_s(a, modern), 1),
            "gateway_100_clients.fastmcp_execs_per_s": round(per_s(b, modern), 1),
            "gateway_peak_rss.mib": round(gateways[0].rss_peak_kib / 1024, 1),
            "gateway_peak_rss.fastmcp_mib": round(gateways[1].rss_peak_kib / 1024, 1),
        }
        history.record(args.record, median_us, also, quick)


if __name__ == "__main__":
    main()
