"""Drives `exec-host serve --http` with the official MCP Python SDK, as the serve tests ask.

    drive.py SPEC_JSON

SPEC_JSON is one object:
  url        the server's /mcp address
  mode       "auto" (the SDK's default), "2026-07-28" or "legacy"
  token      a bearer token to send, if any
  elicit     whether the client declares elicitation (default true)
  decisions  the answers the elicitation callback gives, in order: "once", "always",
             "deny" (accepted with that decision) or "decline"; past the list it declines
  calls      [{"tool", "args", "manual"?}]: each called in turn. A "manual" call is driven
             one round at a time instead of by the SDK: its first answer must be an
             InputRequiredResult, and "manual" says how the retry goes:
               {"state": "as-is" | "tampered", "responses": {...} | "accept-all",
                "again": true,       (retry a second time with the same state)
                "retry_url": URL}    (send the retry to another server, as to another replica)

Prints one JSON object: the protocol negotiated, the tools listed (with ttlMs), the messages
of the elicitations answered, and one entry per call: its text, isError and structured
content, or the error the server answered (code and message); for a manual call, the
input requests of its first answer too.
"""

import asyncio
import json
import sys

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def outcome_of(result):
    if isinstance(result, types.InputRequiredResult):
        return {
            "input_required": sorted((result.input_requests or {}).keys()),
            "state": result.request_state,
        }
    return {"text": text_of(result), "is_error": bool(result.is_error), "structured": result.structured_content}


async def main(spec):
    decisions = list(spec.get("decisions", []))
    asked = []

    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        decision = decisions.pop(0) if decisions else "decline"
        if decision == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decision})

    headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    callback = on_elicit if spec.get("elicit", True) else None
    report = {"calls": []}
    async with Client(
        streamable_http_client(spec["url"], http_client=http), mode=spec.get("mode", "auto"), elicitation_callback=callback
    ) as client:
        report["protocol"] = client.protocol_version
        listed = await client.list_tools()
        report["tools"] = [tool.name for tool in listed.tools]
        report["ttl_ms"] = getattr(listed, "ttl_ms", None)
        for call in spec["calls"]:
            try:
                manual = call.get("manual")
                if manual is None:
                    report["calls"].append(outcome_of(await client.call_tool(call["tool"], call.get("args", {}))))
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
                for attempt in range(2 if manual.get("again") else 1):
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
                if retrying is not client:
                    await retrying.__aexit__(None, None, None)
            except MCPError as error:
                report["calls"].append({"error": error.error.code, "message": error.error.message})
    report["elicitations"] = asked
    print(json.dumps(report))


asyncio.run(main(json.loads(sys.argv[1])))
