"""The LangChain adapter: `CodeModeTool` in `create_agent`, driven by a fake chat model that
emits tool calls; approvals through real parking, LangGraph interrupts and `Command(resume=)`."""

import asyncio
import json
import os
from typing import Annotated, Any, Optional

import pytest
from langchain.agents import create_agent
from langchain.tools import InjectedToolCallId, ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import is_invalid_resume
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command
from pydantic import Field, ValidationError

import exec_host
from exec_host import _adapters
from exec_host.langchain import CodeModeTool


class FakeChatModel(GenericFakeChatModel):
    """GenericFakeChatModel answering its scripted messages (tool calls included), with the
    `bind_tools` create_agent needs; it never streams, since its `_stream` drops tool calls."""

    disable_streaming: bool = True
    bound: list[dict[str, Any]] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **_: Any) -> "FakeChatModel":
        self.bound = [convert_to_openai_tool(each) for each in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def model(*replies: Any) -> FakeChatModel:
    return FakeChatModel(messages=iter(replies))


def exec_call(*codes: str, ids: Optional[list[str]] = None) -> AIMessage:
    """An AI message calling Exec once per script."""
    ids = ids or [f"call_{n}" for n in range(1, len(codes) + 1)]
    return AIMessage(content="", tool_calls=[{"name": "Exec", "args": {"code": code}, "id": id, "type": "tool_call"} for code, id in zip(codes, ids)])


RAN: list[Any] = []


@tool
def get_order(order_id: str) -> dict:
    """Reads an order."""
    RAN.append(("get_order", order_id))
    return {"id": order_id, "total": 42.5}


@tool
async def to_cents(amount: float) -> str:
    """Converts an amount to cents; answers a JSON string."""
    RAN.append(("to_cents", amount))
    return json.dumps({"cents": round(amount * 100)})


@tool
def fails(x: int) -> int:
    """Always fails."""
    raise ToolException(f"cannot do {x}")


@tool
def refund(order_id: str, cents: int) -> dict:
    """Refunds an order."""
    RAN.append(("refund", order_id, cents))
    return {"refunded": cents}


@tool
async def send_email(to: str) -> str:
    """Sends an email."""
    RAN.append(("send_email", to))
    return f"sent to {to}"


@tool
def delete_order(order_id: str) -> str:
    """Deletes an order."""
    RAN.append(("delete_order", order_id))
    return "deleted"


@tool
def who_am_i(note: str, runtime: ToolRuntime, tool_call_id: Annotated[str, InjectedToolCallId]) -> dict:
    """Says what ToolNode-style injection gave it."""
    return {"note": note, "runtime": runtime.tool_call_id, "id": tool_call_id, "messages": len(runtime.state["messages"])}


READ_ONLY = ["get_order", "to_cents", "fails", "who_am_i"]


def exec_tool(store: Optional[dict] = None, **options: Any) -> CodeModeTool:
    options.setdefault("read_only", READ_ONLY)
    return CodeModeTool(tools=[get_order, to_cents, fails, refund, send_email, delete_order, who_am_i], **(store or {}), **options)


def tool_messages(state: dict) -> list[ToolMessage]:
    return [message for message in state["messages"] if isinstance(message, ToolMessage)]


@pytest.fixture(autouse=True)
def ran():
    RAN.clear()
    return RAN


@pytest.fixture
def spy(monkeypatch):
    """Every Exec started and every handle resumed, through exec_host's own Session."""
    log: list[tuple[str, str]] = []
    exec, resume = exec_host.Session.exec, exec_host.Session.resume

    async def spied_exec(self, code, *, id=None):
        log.append(("exec", id))
        return await exec(self, code, id=id)

    async def spied_resume(self, handle, **answers):
        log.append(("resume", handle))
        return await resume(self, handle, **answers)

    monkeypatch.setattr(exec_host.Session, "exec", spied_exec)
    monkeypatch.setattr(exec_host.Session, "resume", spied_resume)
    return log


class Agent:
    """A create_agent agent with a checkpointer, run with `invoke` (sync) or `ainvoke` (async)."""

    def __init__(self, mode: str, chat: FakeChatModel, tools: list, thread: str = "t-1", **options: Any) -> None:
        self.mode = mode
        self.graph = create_agent(chat, tools, checkpointer=InMemorySaver(), **options)
        self.config = {"configurable": {"thread_id": thread}}

    def run(self, value: Any, thread: Optional[str] = None) -> Any:
        config = {"configurable": {"thread_id": thread}} if thread else self.config
        if self.mode == "sync":
            return self.graph.invoke(value, config, version="v2")
        return asyncio.run(self.graph.ainvoke(value, config, version="v2"))


TWO_TOOLS = """
const order = await tools.get_order({order_id: "A1"});
const {cents} = await tools.to_cents({amount: order.total});
console.log("total", order.total);
return {id: order.id, cents};
"""


def test_the_model_is_offered_exec_alone_naming_the_tools_whose_signatures_a_script_finds():
    chat = model(exec_call("return 1"), "done")
    tool_ = exec_tool()
    create_agent(chat, [tool_]).invoke({"messages": [("user", "hi")]})
    [offered] = chat.bound
    assert offered["function"]["name"] == "Exec"
    assert offered["function"]["parameters"]["properties"].keys() == {"code"}, "the runtime is injected, never shown"
    assert set(READ_ONLY) | {"refund", "send_email", "delete_order"} <= set(offered["function"]["description"].splitlines())
    found = tool_.invoke({"code": 'return (await tools.ToolSearch({query: "select:get_order,who_am_i"})).matches'})
    get_order_, who_am_i_ = json.loads(found)
    assert get_order_["signature"].startswith("tools.get_order(args: {\n  order_id: string;\n})")
    assert get_order_["description"] == "Reads an order."
    assert "runtime" not in who_am_i_["signature"] and "tool_call_id" not in who_am_i_["signature"], "injected arguments are left out"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_agent_runs_a_script_calling_two_tools(mode, ran):
    chat = model(exec_call(TWO_TOOLS), "A1 is 4250 cents.")
    state = Agent(mode, chat, [exec_tool()]).run({"messages": [("user", "how much is A1?")]}).value
    [message] = tool_messages(state)
    assert message.status == "success" and message.tool_call_id == "call_1"
    assert message.artifact["value"] == {"id": "A1", "cents": 4250}, "a JSON string a tool answers reaches the script parsed"
    assert message.artifact["calls"] == ["get_order", "to_cents"]
    assert message.artifact["logs"] == ["total 42.5"]
    assert "4250" in message.content
    assert ran == [("get_order", "A1"), ("to_cents", 42.5)]
    assert state["messages"][-1].content == "A1 is 4250 cents."
    assert chat.seen[1][-1] == message, "the model's second call reads the script's result"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tools_error_rejects_in_the_script_and_a_failed_script_is_an_error_message(mode):
    code = """
    try { await tools.fails({x: 3}) } catch (e) { console.log("caught", e.message) }
    await tools.fails({x: 4})"""
    state = Agent(mode, model(exec_call(code), "sorry"), [exec_tool()]).run({"messages": [("user", "hi")]}).value
    [message] = tool_messages(state)
    assert message.status == "error"
    assert "caught fails: ToolException: cannot do 3" in message.content, message.content
    assert "cannot do 4" in message.content
    assert state["messages"][-1].content == "sorry"


def test_inner_tools_get_what_tool_node_would_inject_with_an_id_of_their_own():
    code = 'await tools.get_order({order_id: "x"}); return await tools.who_am_i({note: "n", runtime: "forged"})'
    state = Agent("sync", model(exec_call(code, ids=["call_7"]), "ok"), [exec_tool()]).run({"messages": [("user", "hi")]}).value
    value = tool_messages(state)[0].artifact["value"]
    assert value == {"note": "n", "runtime": "call_7.1", "id": "call_7.1", "messages": 2}


REFUND = """
const order = await tools.get_order({order_id: "A1"});
const done = await tools.refund({order_id: order.id, cents: 4250});
return {refunded: done.refunded};
"""


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_that_asks_parks_interrupts_and_resumes_once_approved(mode, store, spy, ran):
    agent = Agent(mode, model(exec_call(REFUND), "Refunded."), [exec_tool(store)])
    first = agent.run({"messages": [("user", "refund A1")]})
    [pending] = first.interrupts
    assert pending.value["type"] == "exec_approval" and pending.value["tool_call_id"] == "call_1"
    assert pending.value["code"] == REFUND
    assert pending.value["action_requests"] == [
        {"name": "refund", "args": {"order_id": "A1", "cents": 4250}, "description": pending.value["action_requests"][0]["description"]}
    ]
    assert pending.value["action_requests"][0]["description"].startswith("The Exec script calls `refund`")
    assert pending.value["review_configs"] == [{"action_name": "refund", "allowed_decisions": ["approve", "reject"]}]
    assert pending.response_schema["properties"]["decisions"]["minItems"] == 1
    assert ran == [("get_order", "A1")], "nothing runs past the call that waits"
    assert os.listdir(store["state_store"]), "the Exec is parked in the given store"

    done = agent.run(Command(resume={"decisions": [{"type": "approve"}]}))
    assert done.interrupts == ()
    [message] = tool_messages(done.value)
    assert message.status == "success" and message.artifact["value"] == {"refunded": 4250}
    assert message.artifact["calls"] == ["get_order", "refund"]
    assert done.value["messages"][-1].content == "Refunded."
    assert ran == [("get_order", "A1"), ("refund", "A1", 4250)], "the call before the pause is not made again"
    [(_, exec_id), (_, handle)] = spy
    assert spy == [("exec", "call_1"), ("resume", handle)] and exec_id == "call_1"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_resumed_exec_parks_again_and_always_lasts_the_thread_while_reject_refuses(mode, store, spy, ran):
    code = """
    await tools.refund({order_id: "A1", cents: 1});
    const [mail, gone] = await Promise.allSettled([
      tools.send_email({to: "a@x"}),
      tools.delete_order({order_id: "A1"}),
    ]);
    const again = await tools.send_email({to: "b@x"});
    return {mail: mail.value, gone: gone.reason?.message ?? gone.value, again};
    """
    later = 'return await tools.send_email({to: "c@x"})'
    chat = model(exec_call(code), exec_call(later, ids=["call_2"]), "done", exec_call(later, ids=["call_3"]), "done too")
    agent = Agent(mode, chat, [exec_tool(store)])

    first = agent.run({"messages": [("user", "go")]})
    assert [a["name"] for a in first.interrupts[0].value["action_requests"]] == ["refund"]
    second = agent.run(Command(resume={"decisions": [{"type": "approve"}]}))
    [pending] = second.interrupts
    assert sorted(a["name"] for a in pending.value["action_requests"]) == ["delete_order", "send_email"]
    assert pending.response_schema["properties"]["decisions"]["minItems"] == 2
    decisions = [
        {"type": "approve", "always": True} if a["name"] == "send_email" else {"type": "reject", "message": "keep the order"}
        for a in pending.value["action_requests"]
    ]
    third = agent.run(Command(resume={"decisions": decisions}))
    assert third.interrupts == (), "the tool allowed always is not asked about again, in this Exec or the next"
    first_message, second_message = tool_messages(third.value)
    assert first_message.artifact["value"] == {"mail": "sent to a@x", "gone": "`delete_order` was denied: keep the order", "again": "sent to b@x"}
    assert second_message.artifact["value"] == "sent to c@x"
    assert ("delete_order", "A1") not in ran
    assert ran.count(("refund", "A1", 1)) == 1
    handles = [handle for kind, handle in spy if kind == "resume"]
    assert [kind for kind, _ in spy] == ["exec", "resume", "resume", "exec"]
    assert len(set(handles)) == 2, "each parked Exec is resumed once"

    # "always" is the thread's: another thread asks again.
    other = agent.run({"messages": [("user", "mail c")]}, thread="t-2")
    assert [a["name"] for a in other.interrupts[0].value["action_requests"]] == ["send_email"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_parallel_execs_park_and_resume_separately(mode, store, spy, ran):
    a = 'return await tools.refund({order_id: "A", cents: 1})'
    b = 'return await tools.refund({order_id: "B", cents: 2})'
    records = InMemoryStore()
    agent = Agent(mode, model(exec_call(a, b), "both done"), [exec_tool(store)], store=records)
    first = agent.run({"messages": [("user", "refund both")]})
    assert sorted(i.value["tool_call_id"] for i in first.interrupts) == ["call_1", "call_2"]
    assert len(records.search(("exec_host", "parked"))) == 2, "the records are in the graph's store"
    answers = {i.id: {"decisions": [{"type": "approve"}]} for i in first.interrupts}
    done = agent.run(Command(resume=answers))
    assert done.interrupts == ()
    values = {m.tool_call_id: m.artifact["value"] for m in tool_messages(done.value)}
    assert values == {"call_1": {"refunded": 1}, "call_2": {"refunded": 2}}
    assert sorted(ran) == [("refund", "A", 1), ("refund", "B", 2)]
    assert sorted(kind for kind, _ in spy) == ["exec", "exec", "resume", "resume"]
    assert len({handle for kind, handle in spy if kind == "resume"}) == 2


@pytest.mark.parametrize("answer", [{"decisions": [{"type": "edit"}]}, {"decisions": []}, {"yes": True}, "approve"])
def test_a_bad_resume_answer_is_refused_and_the_interrupt_can_be_answered_again(answer, store, spy, ran):
    agent = Agent("sync", model(exec_call(REFUND), "Refunded."), [exec_tool(store)])
    agent.run({"messages": [("user", "refund A1")]})
    with pytest.raises(ValidationError) as refused:
        agent.run(Command(resume=answer))
    assert is_invalid_resume(refused.value)
    assert [kind for kind, _ in spy] == ["exec"], "nothing was resumed"
    done = agent.run(Command(resume={"decisions": [{"type": "reject"}]}))
    [message] = tool_messages(done.value)
    assert message.status == "error" and "the user rejected this call" in message.content
    assert [kind for kind, _ in spy] == ["exec", "resume"]
    assert ("refund", "A1", 4250) not in ran


def test_outside_a_checkpointed_graph_a_call_that_asks_is_refused_saying_what_lets_it_run(spy):
    exec_tool_ = exec_tool()
    assert json.loads(exec_tool_.invoke({"code": 'return await tools.get_order({order_id: "Z"})'}))["id"] == "Z"
    refused = exec_tool_.invoke({"code": 'return await tools.refund({order_id: "Z", cents: 1})'})
    assert "refund" in refused and "allow" in refused, refused
    state = create_agent(model(exec_call(REFUND), "no"), [exec_tool_]).invoke({"messages": [("user", "x")]})
    [message] = tool_messages(state)
    assert message.status == "error" and "needs approval" in message.content, message.content
    assert [kind for kind, _ in spy] == ["exec", "exec", "exec"], "nothing parked"


def test_the_sync_path_runs_in_a_thread_that_runs_an_event_loop():
    async def main():
        # A notebook calls `invoke` from a cell, inside the notebook's loop.
        return exec_tool().invoke({"code": TWO_TOOLS})

    assert asyncio.run(main()).endswith('{"id":"A1","cents":4250}')


def test_an_approver_that_parks_outside_a_checkpointed_graph_is_told_why():
    answer = exec_tool(approver=lambda request: "park").invoke({"code": REFUND})
    assert "needs a LangGraph agent with a checkpointer" in answer, answer


def test_an_approver_given_answers_instead_of_a_person():
    asked = []

    async def approver(request: exec_host.ApprovalRequest):
        asked.append((request.tool, request.input, request.exec_id))
        return "once"

    state = Agent("async", model(exec_call(REFUND), "ok"), [exec_tool(approver=approver)]).run({"messages": [("user", "x")]}).value
    assert tool_messages(state)[0].artifact["value"] == {"refunded": 4250}
    assert asked == [("refund", {"order_id": "A1", "cents": 4250}, "call_1")]


def test_without_a_state_store_the_processs_private_one_serves_every_tool(spy, ran):
    first = exec_tool()
    assert (first._store, first._key_file) == _adapters.private_store()
    checkpointer, records = InMemorySaver(), InMemoryStore()
    config = {"configurable": {"thread_id": "t-private"}}
    before = create_agent(model(exec_call(REFUND), "unused"), [first], checkpointer=checkpointer, store=records)
    assert before.invoke({"messages": [("user", "refund A1")]}, config, version="v2").interrupts
    after = create_agent(model("Refunded."), [exec_tool()], checkpointer=checkpointer, store=records)
    done = after.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config, version="v2")
    assert tool_messages(done.value)[0].artifact["value"] == {"refunded": 4250}
    assert [kind for kind, _ in spy] == ["exec", "resume"]
    with pytest.raises(ValueError, match="give both"):
        CodeModeTool(tools=[get_order], state_key_file=first._key_file)
    with pytest.raises(ValueError, match="not given"):
        CodeModeTool(tools=[get_order], read_only=["nope"])


def test_a_thread_is_one_conversation_whose_scripts_share_stored_values(store):
    chat = model(
        exec_call('store("seen", {n: 1}); return "kept"'),
        "ok",
        exec_call('return load("seen") ?? "nothing"', ids=["call_2"]),
        "ok",
        exec_call('return load("seen") ?? "nothing"', ids=["call_3"]),
        "ok",
    )
    agent = Agent("sync", chat, [exec_tool(store, limits=exec_host.Limits(max_calls=5))])
    agent.run({"messages": [("user", "keep")]})
    same = agent.run({"messages": [("user", "read")]}).value
    assert tool_messages(same)[-1].artifact["value"] == {"n": 1}
    other = agent.run({"messages": [("user", "read")]}, thread="t-other").value
    assert tool_messages(other)[-1].artifact["value"] == "nothing"


def test_another_tool_object_resumes_with_the_same_state_store_checkpointer_and_graph_store(store, spy, ran):
    """As another process would: a new tool and agent, sharing what is durable."""
    checkpointer, records = InMemorySaver(), InMemoryStore()
    config = {"configurable": {"thread_id": "t-durable"}}
    before = create_agent(model(exec_call(REFUND), "unused"), [exec_tool(store)], checkpointer=checkpointer, store=records)
    assert before.invoke({"messages": [("user", "refund A1")]}, config, version="v2").interrupts
    after = create_agent(model("Refunded."), [exec_tool(store)], checkpointer=checkpointer, store=records)
    done = after.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config, version="v2")
    assert tool_messages(done.value)[0].artifact["value"] == {"refunded": 4250}
    assert ran == [("get_order", "A1"), ("refund", "A1", 4250)]
    assert [kind for kind, _ in spy] == ["exec", "resume"]
