"""Drives `exec-host serve --http` with the official MCP Python SDK, as the serve tests ask.

    drive.py SPEC_JSON

SPEC_JSON is one object:
  url        the server's /mcp address
  mode       "auto" (the SDK's default), "2026-07-28" or "legacy"
  token      a bearer token to send, if any
  elicit     whether the client declares elicitation (default true)
  decisions  the answers the elicitation callback gives, in order: "once", "always",
             "deny" (accepted with that decision), "decline", or an object (a form
             accepted with that content); past the list it declines
  tasks      whether the client declares the Tasks extension (default false): an Exec that
             becomes a task is then followed by polling tasks/get, its forms answered with
             tasks/update from "decisions" (recorded among the elicitations)
  calls      [{"tool", "args", "manual"?, "task"?}]: each called in turn. A "task" says how
             a call that becomes a task is driven:
               {"cancel": true,      (tasks/cancel once it is seen working)
                "get_url": URL,      (poll, update and cancel through another server)
                "one_by_one": true,  (answer several forms with one tasks/update each)
                "bad_update": true,  (first send answers that are not elicitation results)
                "kill_pid": PID,     (SIGKILL that process once the task is seen working)
                "kill_where": {"line": LINE, "logs": {FILE: PID, ...}}}
                                     (once the task is seen working, wait until one FILE holds
                                      LINE, and SIGKILL its PID: the replica running the call)
             and its entry gets "task": the task id, the statuses seen in order, the
             final tasks/get, and the answers to probes (an unknown id, cancel once ended). A "manual" call is driven
             one round at a time instead of by the SDK: its first answer must be an
             InputRequiredResult, and "manual" says how the retry goes:
               {"state": "as-is" | "tampered", "responses": {...} | "accept-all",
                "again": true,       (retry a second time with the same state)
                "concurrent": true,  (send two retries with the same state at once)
                "retry_url": URL}    (send the retry to another server, as to another replica)

Prints one JSON object: the protocol negotiated, the tools listed (with ttlMs), the messages
of the elicitations answered, and one entry per call: its text, isError and structured
content, or the error the server answered (code and message); for a manual call, the
input requests of its first answer too.
"""

import asyncio
import json
import os
import signal
import sys

from typing import Any, ClassVar, Literal

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


class CreateTaskResult(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams


class UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def outcome_of(result):
    if isinstance(result, types.InputRequiredResult):
        return {
            "input_required": sorted((result.input_requests or {}).keys()),
            "state": result.request_state,
        }
    return {"text": text_of(result), "is_error": bool(result.is_error), "structured": result.structured_content}


async def kill_where(where, within_s=20):
    """SIGKILLs the process whose log first holds the line; gives its pid."""
    deadline = anyio.current_time() + within_s
    while anyio.current_time() < deadline:
        for path, pid in where["logs"].items():
            try:
                with open(path) as log:
                    holds = where["line"] in log.read().splitlines()
            except FileNotFoundError:
                holds = False
            if holds:
                os.kill(pid, signal.SIGKILL)
                return pid
        await anyio.sleep(0.05)
    raise TimeoutError(f"no log holds {where['line']!r} within {within_s} s")


async def main(spec):
    decisions = list(spec.get("decisions", []))
    asked = []

    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        decision = decisions.pop(0) if decisions else "decline"
        if decision == "decline":
            return types.ElicitResult(action="decline")
        if isinstance(decision, dict):
            return types.ElicitResult(action="accept", content=decision)
        return types.ElicitResult(action="accept", content={"decision": decision})

    headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    callback = on_elicit if spec.get("elicit", True) else None
    report = {"calls": []}
    # How the call being made now drives its task, and what its task did.
    driving = {"how": {}, "seen": None}

    def answer_of(decision):
        if decision == "decline":
            return {"action": "decline"}
        return {"action": "accept", "content": {"decision": decision}}

    async def follow(created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        how = driving["how"]
        seen = {"id": created.task_id, "created": created.status, "statuses": []}
        driving["seen"] = seen
        session, other = ctx.session, None
        if how.get("get_url"):
            other = Client(streamable_http_client(how["get_url"], http_client=http), mode="2026-07-28", extensions=[Tasks()])
            await other.__aenter__()
            session = other.session

        async def request(kind, params, result=AnyResult):
            return await session.send_request(kind(params=params), result)

        cancelled = False
        try:
            while True:
                got = (await request(GetTask, TaskParams(task_id=created.task_id))).model_dump(by_alias=True)
                status = got["status"]
                if not seen["statuses"] or seen["statuses"][-1] != status:
                    seen["statuses"].append(status)
                if status == "working" and how.get("cancel") and not cancelled:
                    ack = await request(CancelTask, TaskParams(task_id=created.task_id))
                    seen["cancel_ack"] = ack.model_dump(by_alias=True)
                    cancelled = True
                if status == "working" and how.get("kill_pid") and "killed" not in seen:
                    os.kill(how["kill_pid"], signal.SIGKILL)
                    seen["killed"] = True
                if status == "working" and how.get("kill_where") and "killed" not in seen:
                    seen["killed"] = await kill_where(how["kill_where"])
                if status == "input_required":
                    pending = got.get("inputRequests") or {}
                    if how.get("bad_update") and "bad_update" not in seen:
                        try:
                            await request(
                                UpdateTask,
                                UpdateTaskParams(task_id=created.task_id, input_responses={k: "yes" for k in pending}),
                            )
                            seen["bad_update"] = "acknowledged"
                        except MCPError as error:
                            seen["bad_update"] = {"error": error.error.code, "message": error.error.message}
                    seen.setdefault("forms", []).append(sorted(pending))
                    keys = sorted(pending)
                    batches = [[key] for key in keys] if how.get("one_by_one") else [keys]
                    for batch in batches:
                        responses = {}
                        for key in batch:
                            form = pending[key]
                            asked.append((form.get("params") or form).get("message"))
                            responses[key] = answer_of(decisions.pop(0) if decisions else "decline")
                        await request(UpdateTask, UpdateTaskParams(task_id=created.task_id, input_responses=responses))
                        if how.get("one_by_one") and batch != batches[-1]:
                            between = (await request(GetTask, TaskParams(task_id=created.task_id))).model_dump(by_alias=True)
                            seen.setdefault("between", []).append(sorted(between.get("inputRequests") or {}))
                if status in ("completed", "failed", "cancelled"):
                    seen["final"] = got
                    break
                await anyio.sleep((got.get("pollIntervalMs") or 500) / 1000)
            # Probes: cancelling an ended task is acknowledged; an unknown id is not a task.
            ack = await request(CancelTask, TaskParams(task_id=created.task_id))
            seen["cancel_after_end"] = ack.model_dump(by_alias=True)
            try:
                await request(GetTask, TaskParams(task_id="0" * 32))
                seen["unknown"] = "answered"
            except MCPError as error:
                seen["unknown"] = {"error": error.error.code, "message": error.error.message}
        finally:
            if other is not None:
                await other.__aexit__(None, None, None)
        final = seen["final"]
        if final["status"] == "completed":
            return types.CallToolResult.model_validate(final["result"])
        text = f"task {final['status']}: {final.get('error') or final.get('statusMessage') or ''}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    class Tasks(ClientExtension):
        identifier = "io.modelcontextprotocol/tasks"

        def claims(self):
            return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=follow)]

    extensions = [Tasks()] if spec.get("tasks") else []
    async with Client(
        streamable_http_client(spec["url"], http_client=http),
        mode=spec.get("mode", "auto"),
        elicitation_callback=callback,
        extensions=extensions,
    ) as client:
        report["protocol"] = client.protocol_version
        listed = await client.list_tools()
        report["tools"] = [tool.name for tool in listed.tools]
        report["ttl_ms"] = getattr(listed, "ttl_ms", None)
        for call in spec["calls"]:
            try:
                manual = call.get("manual")
                if manual is None:
                    driving["how"], driving["seen"] = call.get("task", {}), None
                    entry = outcome_of(await client.call_tool(call["tool"], call.get("args", {})))
                    if driving["seen"] is not None:
                        entry["task"] = driving["seen"]
                    report["calls"].append(entry)
                    continue
                first = await client.session.call_tool(call["tool"], call.get("args", {}), allow_input_required=True)
                entry = outcome_of(first)
                report["calls"].append(entry)
                if not isinstance(first, types.InputRequiredResult):
                    continue
                state = first.request_state
                if manual.get("state") == "tampered":
                    state = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
                responses = manual.get("responses", "accept-all")
                if responses == "accept-all":
                    responses = {
                        key: {"action": "accept", "content": {"decision": "once"}} for key in first.input_requests or {}
                    }
                retrying = client
                if manual.get("retry_url"):
                    retrying = Client(
                        streamable_http_client(manual["retry_url"], http_client=http),
                        mode="2026-07-28",
                        elicitation_callback=callback,
                    )
                    await retrying.__aenter__()
                async def retry(attempt):
                    try:
                        retried = await retrying.session.call_tool(
                            call.get("retry_tool", call["tool"]),
                            call.get("args", {}),
                            input_responses=responses,
                            request_state=state,
                            allow_input_required=True,
                        )
                        entry[f"retry_{attempt}"] = outcome_of(retried)
                    except MCPError as error:
                        entry[f"retry_{attempt}"] = {"error": error.error.code, "message": error.error.message}

                if manual.get("concurrent"):
                    await asyncio.gather(retry(0), retry(1))
                else:
                    for attempt in range(2 if manual.get("again") else 1):
                        await retry(attempt)
                if retrying is not client:
                    await retrying.__aexit__(None, None, None)
            except MCPError as error:
                report["calls"].append({"error": error.error.code, "message": error.error.message})
    report["elicitations"] = asked
    print(json.dumps(report))


asyncio.run(main(json.loads(sys.argv[1])))
