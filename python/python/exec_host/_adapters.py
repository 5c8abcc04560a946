"""What the framework adapters (`pydantic_ai`, `openai_agents`, `langchain`) decide alike: the
state store they park in when given none, the conversation of a framework's own id, a tool's
text output as a script receives it, asking a user's approver, and finding the parked Exec of a
model's tool call."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import re
from typing import Any, Callable, Optional

import exec_host

from . import _native

def private_store() -> tuple[str, str]:
    """The state store and key file an adapter parks in when it is given none: a temporary
    folder of this process (0700) holding the store and a new key (0600), the same for every
    adapter, removed at exit. A script parked there resumes only in this process."""
    return _native.private_store()


def conversation(framework_id: str, prefix: str) -> str:
    """The exec-host conversation of a framework's conversation or thread id: the id itself
    when exec-host takes it (1 to 128 of `A-Za-z0-9._:-`), else `prefix-` and a digest of it,
    the same in every process."""
    if re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", framework_id):
        return framework_id
    return f"{prefix}-{hashlib.sha256(framework_id.encode()).hexdigest()[:40]}"


def parsed(text: str) -> Any:
    """A tool's text output as a script receives it: a JSON object or array parsed (frameworks
    hand models strings), other text as it is."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


async def ask(approver: Callable[[exec_host.ApprovalRequest], Any], request: exec_host.ApprovalRequest) -> Any:
    """A user's approver's answer: awaited when it is async, else on a worker thread (it may
    wait for a person, which must not stop the event loop)."""
    if inspect.iscoroutinefunction(approver):
        return await approver(request)
    answer = await asyncio.to_thread(approver, request)
    return await answer if inspect.isawaitable(answer) else answer


async def parked(session: exec_host.Session, exec_id: str) -> Optional[exec_host.Paused]:
    """The parked Exec a model's tool call waits in (the Exec ran with the call's id), found in
    the session's store from any process; None when there is none."""
    return next((paused for paused in await session.parked_execs() if paused.exec_id == exec_id), None)


async def discard(session: exec_host.Session, which: Callable[[str], bool]) -> None:
    """Discards the parked Execs of the tool calls `which` names: none of their waiting calls
    will run. One taken or expired meanwhile is passed over."""
    for paused in await session.parked_execs():
        if paused.exec_id is not None and which(paused.exec_id):
            try:
                await session.discard(paused.handle)
            except exec_host.ResumeError:
                pass
