"""Bad input from Python: tools that block, return too much, recurse into the session;
approvers that never answer; a closed session; scripts that time out while a tool runs;
many Execs at once. None may hang the host, crash the interpreter, or leave work behind."""

import asyncio
import threading
import time

import pytest
from conftest import sleeper, until

import exec_host


def test_a_tool_that_blocks_is_ended_by_the_nested_wait_cap_and_the_session_goes_on():
    release = threading.Event()

    def stuck() -> int:
        """Blocks until released."""
        release.wait(30)
        return 1

    async def main():
        limits = exec_host.Limits(max_nested_wait=0.5)
        async with await exec_host.Session.open(tools=[stuck], allow=["stuck"], limits=limits) as session:
            started = time.monotonic()
            result = await session.exec("return await tools.stuck({})")
            assert not result.ok and "wait" in result.text.lower(), result.text
            assert time.monotonic() - started < 10
            assert (await session.exec("return 1")).value == 1
        release.set()

    asyncio.run(main())


def test_a_tool_that_returns_100_mb_is_refused_before_the_copy():
    def huge() -> str:
        """Returns 100 MB."""
        return "x" * (100 * 1024 * 1024)

    async def main():
        async with await exec_host.Session.open(tools=[huge], allow=["huge"]) as session:
            result = await session.exec("try { await tools.huge({}) } catch (e) { return e.message }")
            assert result.ok, result.text
            assert "TypeError" in result.value and "more than 32 MiB" in result.value, result.value
            assert (await session.exec("return 2")).value == 2

    asyncio.run(main())


def test_a_tool_that_runs_execs_of_its_own_is_bounded_in_depth():
    holder = {}
    depths = []

    async def recurse() -> object:
        """Runs an Exec that calls this tool again."""
        depths.append(1)
        result = await holder["session"].exec("return await tools.recurse({})")
        return result.value if result.ok else result.text

    async def main():
        async with await exec_host.Session.open(tools=[recurse], allow=["recurse"]) as session:
            holder["session"] = session
            result = await session.exec("try { return await tools.recurse({}) } catch (e) { return 'stopped: ' + e.message }")
            assert result.ok, result.text
            assert f"nest at most {exec_host.MAX_EXEC_DEPTH} deep" in str(result.value), result.value
            assert len(depths) == exec_host.MAX_EXEC_DEPTH + 1

    asyncio.run(main())


def test_a_sync_tool_may_run_execs_through_a_sync_session_and_is_bounded_too():
    holder = {}

    def recurse() -> object:
        """Runs an Exec that calls this tool again."""
        result = holder["session"].exec("return await tools.recurse({})")
        return result.value if result.ok else result.text

    with exec_host.SyncSession(tools=[recurse], allow=["recurse"]) as session:
        holder["session"] = session
        result = session.exec("try { return await tools.recurse({}) } catch (e) { return 'stopped: ' + e.message }")
        assert result.ok and "nest at most" in str(result.value), result.value


def test_a_session_used_after_close_raises():
    async def main():
        session = await exec_host.Session.open()
        await session.close()
        await session.close()  # again: nothing
        with pytest.raises(exec_host.SessionError, match="closed"):
            await session.exec("return 1")
        with pytest.raises(exec_host.SessionError, match="closed"):
            session.declaration()

    asyncio.run(main())


def test_an_approver_that_never_answers_is_ended_by_the_nested_wait_cap_and_by_abort():
    def remove(path: str) -> str:
        """Removes a file."""
        return "removed"

    async def never(request):
        await asyncio.Event().wait()

    async def main():
        limits = exec_host.Limits(max_nested_wait=0.5)
        async with await exec_host.Session.open(tools=[remove], approver=never, limits=limits) as session:
            result = await session.exec("return await tools.remove({path: 'a'})")
            assert not result.ok, result.text
        async with await exec_host.Session.open(tools=[remove], approver=never) as session:
            task = asyncio.ensure_future(session.exec("return await tools.remove({path: 'a'})"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (await session.exec("return 3")).value == 3

    asyncio.run(main())


def test_a_script_that_times_out_while_a_python_tool_runs_cancels_the_tool():
    slow, seen = sleeper()

    async def main():
        limits = exec_host.Limits(budget=0.3)
        async with await exec_host.Session.open(tools=[slow], allow=["slow"], limits=limits) as session:
            started = time.monotonic()
            result = await session.exec("tools.slow({}); while (true) {}")
            assert not result.ok and result.error is not None, result.text
            assert time.monotonic() - started < 10
            await until(seen, "cancelled")
            assert seen.get("cancelled"), "the tool of a script that timed out is cancelled"

    asyncio.run(main())


def test_a_thousand_concurrent_execs_from_one_loop():
    calls = []

    async def tick(n: int) -> int:
        """Counts a call."""
        calls.append(n)
        await asyncio.sleep(0.01)
        return n

    async def main():
        async with await exec_host.Session.open(tools=[tick], allow=["tick"]) as session:
            results = await asyncio.gather(*(session.exec(f"return await tools.tick({{n: {n}}})") for n in range(1000)))
            assert [result.value for result in results] == list(range(1000))
            assert sorted(calls) == list(range(1000))

    asyncio.run(main())


def test_a_session_is_shared_between_threads():
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    with exec_host.SyncSession(tools=[add], allow=["add"]) as session:
        values = {}

        def worker(n: int) -> None:
            values[n] = session.exec(f"return await tools.add({{a: {n}, b: 1}})").value

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert values == {n: n + 1 for n in range(16)}


def test_bad_options_are_refused_with_what_is_wrong():
    async def main():
        with pytest.raises(ValueError, match="permission mode|mode"):
            await exec_host.Session.open(permission_mode="whatever")
        with pytest.raises(exec_host.SessionError, match="state key file"):
            await exec_host.Session.open(state_store="/tmp", state_key_file="/no/such/key")
        with pytest.raises(ValueError, match="mcpServers|mcp_servers"):
            await exec_host.Session.open(mcp_servers={"bad": {"command": 3}})
        with pytest.raises(TypeError, match="schema of `odd`"):
            await exec_host.Session.open(tools=[exec_host.tool(lambda: 1, name="odd", schema={"type": {1, 2}})])

    asyncio.run(main())


def test_execs_awaited_from_two_loops_run_their_async_tools_each_on_its_own():
    import concurrent.futures

    loops = {}

    @exec_host.tool(read_only=True)
    async def which(n: int) -> bool:
        """Tells whether it runs on the loop of the Exec that called it."""
        await asyncio.sleep(0.05)
        return asyncio.get_running_loop() is loops[n]

    holder = {}

    async def open_session():
        holder["session"] = await exec_host.Session.open(tools=[which])

    asyncio.run(open_session())

    def run(n: int) -> list:
        async def main():
            loops[n] = asyncio.get_running_loop()
            return (await holder["session"].exec(f"return [await tools.which({{n: {n}}}), await tools.which({{n: {n}}})]")).value

        return asyncio.run(main())

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(run, range(8)))
    assert answers == [[True, True]] * 8
    asyncio.run(holder["session"].close())
