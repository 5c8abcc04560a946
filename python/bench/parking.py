"""Parking an Exec that waits on a person, exec-host against pydantic-monty's snapshots, in one run.

    python bench/parking.py [--quick] [--record FILE]      (from python/; peers.py runs it too)

A script makes N host calls (N = 10, 100, 1,000), then calls a tool that needs a person's
answer; the run stops there, its state goes to disk, and later another session (as another
process would) takes it up with the answer and runs it to its end. The same script in each
language, the same Python functions.

- exec-host parks by journal: the Exec stops at the call that asks (the approver answers
  "park"), and the folder store keeps the script, the results of the calls made so far and
  what the parked call asked, sealed. To resume, a second `Session` on the same store and
  conversation runs the script again from the start in a fresh sandbox, the N calls answered
  from the journal (never made again), and the parked call made once with the answer.
- pydantic-monty suspends its interpreter at an external call: `feed_start` returns a
  snapshot at each call, the host answers N of them, then `snapshot.dump()` serialises the
  suspended interpreter to bytes, written to a file. To resume, a fresh session of the pool
  reads the file, `load_snapshot` restores the interpreter, and `resume` gives the answer.

The figures: the bytes stored; "to the park", from the start of the script until its state is
on disk (the N calls included); "resume", from reading the state until the script's value is
back. Rounds alternate between the two, medians over all samples. Results are checked;
timings never are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import exec_host

SIZES = (10, 100, 1000)


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def confirm(total: int) -> int:
    """Needs a person's answer before it runs; answers its argument."""
    return total


JS = "let t = 0;\nfor (let i = 0; i < %d; i++) t += await tools.add({a: i, b: 1});\nreturn await tools.confirm({total: t});"
PY = "t = 0\nfor i in range(%d):\n    t += add(i, 1)\nconfirm(t)"


def expected(n: int) -> int:
    return sum(i + 1 for i in range(n))


class ExecHostParking:
    name = "exec-host"

    async def open(self, folder: str) -> None:
        key = os.path.join(folder, "state.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(os.urandom(32).hex())
        options: dict[str, Any] = dict(
            tools=[add, confirm],
            allow=["add"],
            ask=["confirm"],
            state_store=os.path.join(folder, "store"),
            state_key_file=key,
            conversation="parking-bench",
            approver=lambda request: "park",
            limits=exec_host.Limits(max_calls=max(SIZES) + 10),
        )
        self.store = options["state_store"]
        self.first = await exec_host.Session.open(**options)
        # Another session on the same store and conversation, as another process would be.
        self.second = await exec_host.Session.open(**options)

    async def close(self) -> None:
        await self.first.close()
        await self.second.close()

    def stored_bytes(self) -> int:
        return sum(entry.stat().st_size for entry in os.scandir(self.store) if entry.is_file())

    async def sample(self, n: int) -> tuple[float, float, int]:
        started = time.perf_counter()
        parked = await self.first.exec(JS % n)
        to_park = time.perf_counter() - started
        if parked.paused is None:
            raise RuntimeError(f"exec-host did not park: {parked.text}")
        stored = self.stored_bytes()
        ids = [approval.id for approval in parked.paused.approvals]
        started = time.perf_counter()
        result = await self.second.resume(parked.paused.handle, approve=ids)
        resumed = time.perf_counter() - started
        if not result.ok or result.value != expected(n):
            raise RuntimeError(f"exec-host resumed to {result.text!r}, not {expected(n)}")
        return to_park, resumed, stored


class MontyParking:
    name = "pydantic-monty"

    async def open(self, folder: str) -> None:
        import pydantic_monty

        self.monty = pydantic_monty
        self.folder = folder
        self.stack = contextlib.AsyncExitStack()
        self.pool = await self.stack.enter_async_context(pydantic_monty.AsyncMonty(min_processes=2, max_processes=2))

    async def close(self) -> None:
        await self.stack.aclose()

    async def sample(self, n: int) -> tuple[float, float, int]:
        monty = self.monty
        path = os.path.join(self.folder, "snapshot.bin")
        # Sessions count host round trips against `max_suspensions` (1,000 by default).
        limits = {"max_suspensions": max(SIZES) + 10}
        async with self.pool.checkout(limits=limits) as session:
            started = time.perf_counter()
            snapshot = await session.feed_start(PY % n)
            while snapshot.function_name != "confirm":
                if snapshot.function_name != "add":
                    raise RuntimeError(f"pydantic-monty called {snapshot.function_name}")
                snapshot = await snapshot.resume({"return_value": add(*snapshot.args)})
            state = snapshot.dump()
            with open(path, "wb") as file:
                file.write(state)
            to_park = time.perf_counter() - started
        async with self.pool.checkout(limits=limits) as fresh:
            started = time.perf_counter()
            with open(path, "rb") as file:
                state = file.read()
            snapshot = await fresh.load_snapshot(state)
            done = await snapshot.resume({"return_value": confirm(*snapshot.args)})
            resumed = time.perf_counter() - started
        if not isinstance(done, monty.MontyComplete) or done.output != expected(n):
            raise RuntimeError(f"pydantic-monty resumed to {done!r}, not {expected(n)}")
        return to_park, resumed, len(state)


def shown(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us / 1000:.2f} ms" if us >= 10_000 else f"{us:.0f} µs"


async def measure(quick: bool) -> dict[str, Any]:
    rounds, reps = (2, 3) if quick else (5, 6)
    systems = [ExecHostParking(), MontyParking()]
    taken: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="parking-bench-") as folder:
        for system in systems:
            os.makedirs(os.path.join(folder, system.name))
            await system.open(os.path.join(folder, system.name))
        try:
            for n in SIZES:
                for system in systems:
                    await system.sample(n)  # warm-up, and the check of its value
                for _ in range(rounds):
                    for system in systems:
                        for _ in range(reps):
                            taken.setdefault((system.name, n), []).append(await system.sample(n))
        finally:
            for system in systems:
                await system.close()
    ours, peer = systems[0].name, systems[1].name
    print(
        f"\nParking at a call that waits on a person, after N host calls, then resuming in another "
        f"session (pydantic-monty {importlib.metadata.version('pydantic-monty')}; medians)\n"
    )
    print(f"| N calls before the park | bytes stored, {ours} | {peer} | to the park, {ours} | {peer} | resume, {ours} | {peer} | resume, {peer} / {ours} |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    figures: dict[str, Any] = {}
    for n in SIZES:
        cells = [f"{n:,}"]
        medians = {}
        for column in range(3):
            for name in (ours, peer):
                values = [sample[column] for sample in taken[(name, n)]]
                medians[(name, column)] = statistics.median(values)
        cells += [f"{medians[(ours, 2)]:,.0f}", f"{medians[(peer, 2)]:,.0f}"]
        cells += [shown(medians[(ours, 0)]), shown(medians[(peer, 0)])]
        cells += [shown(medians[(ours, 1)]), shown(medians[(peer, 1)])]
        cells.append(f"{medians[(peer, 1)] / medians[(ours, 1)]:.2f}x")
        print("| " + " | ".join(cells) + " |")
        figures[str(n)] = {
            name: {"stored_bytes": medians[(name, 2)], "to_park_us": round(medians[(name, 0)] * 1e6, 1), "resume_us": round(medians[(name, 1)] * 1e6, 1)}
            for name in (ours, peer)
        }
    return figures


def record(path: str, figures: dict[str, Any], quick: bool) -> None:
    """Appends the figures to `path` as a line of docs/bench-history.jsonl."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench"))
    import history  # scripts/bench/history.py

    median_us, also = {}, {}
    for n, by_system in figures.items():
        ours, peer = by_system[ExecHostParking.name], by_system[MontyParking.name]
        line = f"parking_resume_{n}"
        median_us[line] = ours["resume_us"]
        also[f"{line}.monty_us"] = peer["resume_us"]
        also[f"{line}.to_park_us"] = ours["to_park_us"]
        also[f"{line}.monty_to_park_us"] = peer["to_park_us"]
        also[f"{line}.stored_bytes"] = ours["stored_bytes"]
        also[f"{line}.monty_stored_bytes"] = peer["stored_bytes"]
    history.record(path, median_us, also, quick)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--record", metavar="FILE", help="append the figures to FILE (docs/bench-history.jsonl)")
    options = parser.parse_args()
    figures = asyncio.run(measure(options.quick))
    if options.record:
        record(options.record, figures, options.quick)
    sys.stdout.flush()
    # See peers.py: leave without finalizing, pydantic-monty's threads may abort it.
    os._exit(0)


if __name__ == "__main__":
    main()
