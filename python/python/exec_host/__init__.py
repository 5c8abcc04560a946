"""exec-host from Python: run model-written JavaScript that orchestrates tools in a
WebAssembly sandbox, with your own Python functions as tools.

    import asyncio, exec_host

    def add(a: int, b: int) -> int:
        "Adds two numbers."
        return a + b

    async def main():
        async with await exec_host.Session.open(tools=[add], allow=["add"]) as session:
            result = await session.exec("return await tools.add({a: 2, b: 40})")
            print(result.value)  # 42

    asyncio.run(main())
"""

from __future__ import annotations

import atexit

from . import _native
from ._results import (
    ApprovalRequest,
    CallDetail,
    ExecError,
    ExecResult,
    Image,
    InputRequest,
    Paused,
    PendingApproval,
    Turn,
)
from ._session import Limits, ResumeError, Session, SessionError, SyncSession
from ._tools import MAX_EXEC_DEPTH, CallInfo, current_call, input_schema, output_schema, tool

ExecHostError = _native.ExecHostError

#: The largest value a tool may return, counted as its strings' bytes and 8 for every other
#: part; past it the script's call fails with a `TypeError`.
MAX_VALUE_BYTES: int = _native.MAX_VALUE_BYTES

# At exit, work still running in Rust is cancelled and waited for (at most 2 s), so that no
# thread of the extension touches the interpreter while it finalizes.
atexit.register(_native.shutdown, 2.0)

__all__ = [
    "ApprovalRequest",
    "CallDetail",
    "CallInfo",
    "ExecError",
    "ExecHostError",
    "ExecResult",
    "Image",
    "InputRequest",
    "Limits",
    "MAX_EXEC_DEPTH",
    "MAX_VALUE_BYTES",
    "Paused",
    "PendingApproval",
    "ResumeError",
    "Session",
    "SessionError",
    "SyncSession",
    "Turn",
    "current_call",
    "input_schema",
    "output_schema",
    "tool",
]
