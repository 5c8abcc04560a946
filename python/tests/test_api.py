"""The API beyond a plain Exec: parking and resuming, the whole result, MCP servers,
workspace and Bash, limits, the declaration and search, and an agent loop in a provider's
format."""

import asyncio
import json
import typing

import pytest
import typing_extensions

import exec_host


def remove(path: str) -> str:
    """Removes a file."""
    return f"removed {path}"


def test_an_exec_that_parks_resumes_exactly_once_even_in_another_session(store):
    ran = []

    def charge(amount: int) -> dict:
        """Charges a card."""
        ran.append(amount)
        return {"charged": amount}

    @exec_host.tool(read_only=True)
    def price() -> int:
        """The price."""
        ran.append("price")
        return 42

    async def main():
        first = await exec_host.Session.open(tools=[price, charge], approver=lambda request: "park", **store)
        result = await first.exec("const p = await tools.price({}); const c = await tools.charge({amount: p}); return c")
        assert not result.ok and result.paused is not None, result.text
        [waiting] = result.paused.approvals
        assert (waiting.tool, waiting.input) == ("charge", {"amount": 42})
        assert ran == ["price"]
        assert [p.handle for p in await first.parked_execs()] == [result.paused.handle]
        conversation = first.conversation
        await first.close()

        # Another session of the same conversation and store takes it up.
        second = await exec_host.Session.open(tools=[price, charge], conversation=conversation, **store)
        resumed = await second.resume(result.paused.handle, approve="all")
        assert resumed.ok, resumed.text
        assert resumed.value == {"charged": 42}
        assert ran == ["price", 42], "the call before the park is not made again"
        assert resumed.calls == ["price", "charge"]
        with pytest.raises(exec_host.ResumeError, match="resumed already|unknown"):
            await second.resume(result.paused.handle, approve="all")
        await second.close()

    asyncio.run(main())


def test_a_denied_call_of_a_parked_exec_rejects_in_the_script_and_a_discarded_one_never_runs(store):
    async def main():
        async with await exec_host.Session.open(tools=[remove], approver=lambda request: "park", **store) as session:
            code = "try { return await tools.remove({path: 'a'}) } catch (e) { return 'refused: ' + e.message }"
            parked = await session.exec(code)
            [waiting] = parked.paused.approvals
            resumed = await session.resume(parked.paused.handle, deny={waiting.id: "not that file"})
            assert resumed.ok and "not that file" in resumed.value, resumed.text

            parked = await session.exec(code)
            await session.discard(parked.paused.handle)
            assert await session.parked_execs() == []
            with pytest.raises(exec_host.ResumeError):
                await session.resume(parked.paused.handle, approve="all")

    asyncio.run(main())


def test_park_without_a_state_store_is_a_refusal_that_says_why():
    async def main():
        async with await exec_host.Session.open(tools=[remove], approver=lambda request: "park") as session:
            result = await session.exec("return await tools.remove({path: 'a'})")
            assert not result.ok and result.paused is None
            assert "cannot wait for one here" in result.text, result.text

    asyncio.run(main())


def test_the_result_has_logs_details_summary_images_and_the_error_stage(everything):
    async def main():
        async with await exec_host.Session.open(mcp_servers=everything, permission_mode="bypassPermissions") as session:
            assert session.start_failures == []
            result = await session.exec(
                "console.log('adding');"
                "const sum = await tools['mcp__everything__get-sum']({a: 2, b: 40});"
                "await tools['mcp__everything__get-tiny-image']({});"
                "return sum"
            )
            assert result.ok, result.text
            assert result.logs == ["adding"]
            assert result.calls == ["mcp__everything__get-sum", "mcp__everything__get-tiny-image"]
            assert [detail.ok for detail in result.call_details] == [True, True]
            assert result.images and result.images[0].mime_type == "image/png" and result.images[0].base64
            assert "2 tool calls" in result.summary
            failed = await session.exec("await tools['mcp__everything__get-sum']({a: 'x'})")
            assert not failed.ok and failed.error is not None and failed.error.stage == "execution"
            assert not failed.call_details[0].ok and failed.call_details[0].stage is not None

    asyncio.run(main())


def test_mcp_servers_from_a_file_and_a_server_that_does_not_start(tmp_path, everything):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {**everything, "broken": {"command": "/no/such/program"}}}))

    async def main():
        async with await exec_host.Session.open(mcp_servers=config, permission_mode="bypassPermissions") as session:
            [failure] = session.start_failures
            assert "broken" in failure
            result = await session.exec("return await tools['mcp__everything__echo']({message: 'hi'})")
            assert result.ok and "hi" in json.dumps(result.value), result.text

    asyncio.run(main())


def test_an_http_api_described_by_openapi_is_a_tool_source_its_credential_kept_in_the_host(tmp_path):
    import http.server
    import threading

    seen = []

    class Pets(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("authorization"))
            body = json.dumps({"id": self.path.rsplit("/", 1)[-1], "name": "Rex", "echoed": self.headers.get("authorization")})
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spec = tmp_path / "pets.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: Pets, version: '1'}\npaths:\n  /pets/{id}:\n    get:\n      operationId: getPet\n"
        "      summary: Get a pet\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n"
        "      responses: {200: {description: the pet, content: {application/json: {schema: {type: object}}}}}\n"
    )
    token = "secret-token-for-the-test"
    apis = {"pets": {"spec": str(spec), "baseUrl": f"http://127.0.0.1:{server.server_address[1]}", "auth": {"type": "bearer", "token": token}}}
    try:
        with exec_host.SyncSession(apis=apis) as session:
            assert any(match["name"] == "api__pets__getPet" for match in session.search("get a pet"))
            result = session.exec('return await tools.api__pets__getPet({ id: "7" })')
            assert result.ok, result.text
            assert result.value == {"id": "7", "name": "Rex", "echoed": "Bearer [credential]"}
            assert seen == [f"Bearer {token}"], "the credential reached the API, and only it"
            assert token not in json.dumps(result.value) and token not in result.text
    finally:
        server.shutdown()


def test_an_mcp_servers_question_goes_to_the_input_handler(everything):
    asked = []

    async def answer(request: exec_host.InputRequest):
        asked.append(request)
        return {}

    async def main():
        async with await exec_host.Session.open(
            mcp_servers=everything, permission_mode="bypassPermissions", input_handler=answer
        ) as session:
            result = await session.exec(
                "return await tools['mcp__everything__trigger-url-elicitation']({url: 'https://example.com/sign-in'})"
            )
            assert result.ok, result.text
            [request] = asked
            assert (request.server, request.kind, request.url) == ("everything", "url", "https://example.com/sign-in")
            assert "accept" in json.dumps(result.value).lower(), result.value

    asyncio.run(main())


def test_workspace_tools_and_bash_on_and_off(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("TODO: write tests\n")

    async def main():
        async with await exec_host.Session.open(workspace=workspace, bash=True, permission_mode="bypassPermissions") as session:
            result = await session.exec(
                "const f = await tools.read_file({path: 'notes.md'});"
                "const b = await tools.Bash({command: 'wc -l < notes.md'});"
                "return [f.content, b]"
            )
            assert result.ok, result.text
            assert "TODO" in result.value[0] and "1" in json.dumps(result.value[1])
        async with await exec_host.Session.open(workspace=workspace, bash=False, permission_mode="bypassPermissions") as session:
            result = await session.exec("return await tools.Bash({command: 'ls'})")
            assert not result.ok and "Bash" in result.text

    asyncio.run(main())


def test_limits_bound_the_scripts_own_time_not_its_waits():
    async def slow() -> int:
        """Takes half a second."""
        await asyncio.sleep(0.5)
        return 1

    async def main():
        limits = exec_host.Limits(budget=0.2)
        async with await exec_host.Session.open(tools=[slow], allow=["slow"], limits=limits) as session:
            waited = await session.exec("return await tools.slow({})")
            assert waited.ok, "waiting on a tool does not count against the budget"
            spun = await session.exec("while (true) {}")
            assert not spun.ok and "0.2" in spun.text or "200" in spun.text, spun.text
        with pytest.raises(ValueError, match="budget"):
            await exec_host.Session.open(limits=exec_host.Limits(budget=-1))

    asyncio.run(main())


def test_the_declaration_the_d_ts_and_search_name_the_python_tools():
    class Point(typing_extensions.TypedDict):
        x: float
        y: float

    def distance(a: Point, b: Point) -> float:
        """The distance between two points."""
        return ((a["x"] - b["x"]) ** 2 + (a["y"] - b["y"]) ** 2) ** 0.5

    async def main():
        async with await exec_host.Session.open(tools=[distance], allow=["distance"]) as session:
            declaration = session.declaration()
            assert declaration["name"] == "Exec" and declaration["input_schema"]["required"] == ["code"]
            assert "distance" in session.declaration_file()
            [found] = [match for match in session.search("distance between points") if match["name"] == "distance"]
            assert "distance" in found["signature"]
            result = await session.exec("return await tools.distance({a: {x: 0, y: 0}, b: {x: 3, y: 4}})")
            assert result.ok and result.value == 5.0, result.text

    asyncio.run(main())


def test_an_agent_loop_in_a_providers_own_format():
    async def main():
        async with await exec_host.Session.open(tools=[remove], allow=["remove"]) as session:
            history = [{"role": "user", "content": [{"type": "text", "text": "remove a"}]}]
            prepared = session.prepare(history, "anthropic")
            history += prepared["append"]
            assert [tool["name"] for tool in prepared["request"]["tools"]] == ["Exec"]
            response = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "scripted",
                "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Exec", "input": {"code": "return await tools.remove({path: 'a'})"}}],
            }
            reply = session.reply(response, "anthropic")
            assert reply["stop"] == "tool_use"
            history.append(reply["message"])
            turn = await session.call(reply["tool_calls"])
            assert turn.results[0].ok and turn.results[0].value == "removed a"
            history += turn.messages
            assert history[-1]["content"][0]["type"] == "tool_result"
            request = session.prepare(history, "openai-responses")["request"]
            assert any(item.get("type") == "function_call_output" for item in request["input"])

    asyncio.run(main())


def test_output_schema_and_validation_come_from_the_annotations():
    class Reading(typing_extensions.TypedDict):
        celsius: float

    def reading(city: str, days: int = 1) -> Reading:
        """A reading."""
        return {"celsius": 21.5 * days}

    assert exec_host.output_schema(reading)["properties"]["celsius"]["type"] == "number"

    async def main():
        async with await exec_host.Session.open(tools=[reading], allow=["reading"]) as session:
            result = await session.exec(
                "const ok = await tools.reading({city: 'Oslo', days: 2});"
                "let bad; try { await tools.reading({city: 'Oslo', days: 'many'}) } catch (e) { bad = e.message }"
                "return [ok, bad]"
            )
            assert result.ok, result.text
            assert result.value[0] == {"celsius": 43.0}
            assert "ValidationError" in result.value[1], result.value[1]

    asyncio.run(main())


def test_without_pydantic_a_documented_subset_of_annotations_is_read(monkeypatch):
    from exec_host import _tools

    monkeypatch.setattr(_tools, "_pydantic", lambda: None)

    def pick(kinds: list[str], mode: typing.Literal["a", "b"], limit: typing.Optional[int] = None, extra: dict[str, float] = {}) -> str:
        """Picks."""
        return "x"

    assert exec_host.input_schema(pick) == {
        "type": "object",
        "properties": {
            "kinds": {"type": "array", "items": {"type": "string"}},
            "mode": {"enum": ["a", "b"]},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "extra": {"type": "object", "additionalProperties": {"type": "number"}, "default": {}},
        },
        "required": ["kinds", "mode"],
    }
    assert exec_host.output_schema(pick) == {"type": "string"}


def test_a_tool_given_its_name_description_and_schema():
    async def lookup(**arguments):
        return {"got": arguments}

    named = exec_host.tool(
        lookup,
        name="find-user",
        description="Finds a user by id.",
        schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        read_only=True,
    )

    async def main():
        async with await exec_host.Session.open(tools=[named]) as session:
            assert "Finds a user by id." in session.declaration_file()
            result = await session.exec("return await tools['find-user']({id: 7})")
            assert result.ok and result.value == {"got": {"id": 7}}, result.text

    asyncio.run(main())


def test_a_tool_and_the_approver_know_which_exec_and_call_they_serve():
    seen = []

    @exec_host.tool(read_only=True)
    async def where() -> str:
        """Says which call it serves."""
        info = exec_host.current_call()
        seen.append((info.exec_id, info.call, info.depth))
        return "ok"

    asked = []

    def approve(request: exec_host.ApprovalRequest):
        asked.append((request.exec_id, request.call))
        return "once"

    async def main():
        async with await exec_host.Session.open(tools=[where, remove], approver=approve) as session:
            result = await session.exec("await tools.where({}); await tools.remove({path: 'a'}); return 1", id="model-call-7")
            assert result.ok, result.text
    asyncio.run(main())
    assert seen[0] == ("model-call-7", 0, 0)
    assert asked == [("model-call-7", 1)]
    assert exec_host.current_call() is None
