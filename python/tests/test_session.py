import asyncio
import threading

import pytest
from conftest import sleeper, until

import exec_host


def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


async def greet(name: str, excited: bool = False) -> str:
    """Greets someone."""
    await asyncio.sleep(0)
    return f"hello, {name}{'!' if excited else ''}"


def fails(why: str) -> None:
    """Always raises."""
    raise ValueError(why)


def test_a_schema_is_read_from_the_signature():
    assert exec_host.input_schema(greet) == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "excited": {"type": "boolean", "default": False}},
        "required": ["name"],
    }


def test_python_functions_are_tools_sync_on_a_worker_async_on_the_loop():
    seen = {}

    @exec_host.tool(read_only=True)
    def where() -> str:
        """Says which thread it runs on."""
        seen["thread"] = threading.current_thread() is threading.main_thread()
        return "ok"

    async def main():
        allow = {"permissions": {"allow": ["add", "greet"]}}
        async with await exec_host.Session.open(tools=[add, greet, where], settings=allow) as session:
            result = await session.exec(
                "const sum = await tools.add({a: 2, b: 40});"
                "const hi = await tools.greet({name: 'Ada', excited: true});"
                "await tools.where({});"
                "return {sum, hi}"
            )
            assert result.ok, result.text
            assert result.value == {"sum": 42, "hi": "hello, Ada!"}
            assert result.calls == ["add", "greet", "where"]

    asyncio.run(main())
    assert seen["thread"] is False, "a sync tool never runs on the event loop's thread"


def test_a_tools_exception_rejects_the_scripts_await_with_its_type_and_message():
    async def main():
        async with await exec_host.Session.open(tools=[fails], settings={"permissions": {"allow": ["fails"]}}) as session:
            result = await session.exec("try { await tools.fails({why: 'no disk'}) } catch (e) { return e.message }")
            assert result.ok, result.text
            assert "ValueError: no disk" in result.value
            assert "Traceback" not in result.value

    asyncio.run(main())


def test_a_tool_that_may_change_things_asks_and_is_refused_when_nobody_can_answer():
    async def main():
        async with await exec_host.Session.open(tools=[add]) as session:
            result = await session.exec("return await tools.add({a: 1, b: 2})")
            assert not result.ok
            assert "`add` needs approval" in result.text and "permissions.allow rule `add`" in result.text

    asyncio.run(main())


def test_a_script_that_throws_is_a_failed_exec():
    async def main():
        async with await exec_host.Session.open() as session:
            result = await session.exec("throw new Error('boom')")
            assert not result.ok
            assert result.error is not None and "boom" in result.error.message

    asyncio.run(main())


def test_cancelling_the_awaiting_task_aborts_the_exec():
    async def main():
        async with await exec_host.Session.open() as session:
            task = asyncio.ensure_future(session.exec("await new Promise(r => setTimeout(r, 60000)); return 1"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The session still serves.
            assert (await session.exec("return 2")).value == 2

    asyncio.run(main())


def test_a_value_that_is_not_plain_data_is_refused_naming_where_it_is():
    import datetime

    def dated() -> dict:
        """Returns a date inside a list."""
        return {"items": [1, {"when": datetime.date(2026, 1, 1)}]}

    def not_a_number() -> float:
        """Returns NaN."""
        return float("nan")

    async def main():
        allow = {"permissions": {"allow": ["dated", "not_a_number"]}}
        async with await exec_host.Session.open(tools=[dated, not_a_number], settings=allow) as session:
            code = "const out = []; for (const f of [tools.dated, tools.not_a_number]) { try { await f({}) } catch (e) { out.push(e.message) } } return out"
            result = await session.exec(code)
            assert result.ok, result.text
            dated_error, nan_error = result.value
            assert "TypeError" in dated_error and "date" in dated_error and "$.items[1].when" in dated_error, dated_error
            assert "nan is not a json number" in nan_error.lower(), nan_error

    asyncio.run(main())


def test_an_abandoned_async_tool_is_cancelled_on_its_loop():
    slow, seen = sleeper()

    async def main():
        allow = {"permissions": {"allow": ["slow"]}}
        async with await exec_host.Session.open(tools=[slow], settings=allow) as session:
            task = asyncio.ensure_future(session.exec("return await tools.slow({})"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await until(seen, "cancelled")
        assert seen.get("cancelled"), "the coroutine of an aborted Exec is cancelled"

    asyncio.run(main())


def test_the_interpreter_exits_cleanly_with_execs_and_tools_in_flight():
    import subprocess
    import sys

    program = """
import asyncio, time, exec_host

def busy():
    "Blocks its thread."
    time.sleep(0.5)
    return 1

async def main():
    session = await exec_host.Session.open(tools=[busy], settings={"permissions": {"allow": ["busy"]}})
    for _ in range(50):
        asyncio.ensure_future(session.exec("return await tools.busy({})"))
    await asyncio.sleep(0.2)

asyncio.run(main())
print("exited")
"""
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert "exited" in done.stdout


def test_the_approver_answers_each_call_that_asks_and_its_exception_is_a_denial():
    asked = []

    async def approve(request: exec_host.ApprovalRequest):
        asked.append((request.tool, request.input))
        if request.tool == "add":
            return "once"
        if request.tool == "fails":
            raise RuntimeError("approver crashed")
        return ("deny", "not today")

    def remove(path: str) -> str:
        """Removes a file."""
        return f"removed {path}"

    async def main():
        async with await exec_host.Session.open(tools=[add, fails, remove], approver=approve) as session:
            code = (
                "const out = [await tools.add({a: 1, b: 2})];"
                "for (const call of [() => tools.fails({why: 'x'}), () => tools.remove({path: 'a'})]) {"
                "  try { out.push(await call()) } catch (e) { out.push(e.message) } }"
                "return out"
            )
            result = await session.exec(code)
            assert result.ok, result.text
            added, failed, removed = result.value
            assert added == 3
            assert "the approver failed" in failed and "approver crashed" in failed, failed
            assert "not today" in removed, removed
            assert asked[0] == ("add", {"a": 1, "b": 2})

    asyncio.run(main())


def test_a_sync_session_blocks_and_ctrl_c_aborts_the_exec_it_waits_for():
    import os
    import signal

    # Ctrl-C raises KeyboardInterrupt only under Python's own handler, which Python does not
    # install when it starts with SIGINT ignored (a background job of a non-interactive shell).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with exec_host.SyncSession(tools=[add, greet], settings={"permissions": {"allow": ["add", "greet"]}}) as session:
            result = session.exec("return [await tools.add({a: 1, b: 1}), await tools.greet({name: 'Bo'})]")
            assert result.value == [2, "hello, Bo"], result.text
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                session.exec("await new Promise(r => setTimeout(r, 60000)); return 1")
            assert session.exec("return 3").value == 3, "the session goes on after an interrupted Exec"
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_sync_session_refuses_to_block_a_running_loop():
    async def main():
        with pytest.raises(RuntimeError, match="inside a running event loop"):
            exec_host.SyncSession()

    asyncio.run(main())
