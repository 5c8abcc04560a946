"""What an Exec or a tool call comes to, and what the host asks a person, as Python objects
read from the library's report (the JSON `exec-host run --json` prints)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class ExecError:
    """Why a call failed: the stage of the failure (`"params"`, `"permission"`, `"hook"`,
    `"execution"`, ...) and its message."""

    stage: Optional[str]
    message: str


@dataclass(frozen=True)
class Image:
    """An image a script attached to its result (`console.image`), base64-encoded."""

    mime_type: str
    base64: str


@dataclass(frozen=True)
class CallDetail:
    """One nested call of an Exec: the tool, whether it succeeded, the stage it failed at,
    how long it took (milliseconds), and a note (why it was refused, say)."""

    name: str
    ok: bool
    stage: Optional[str]
    ms: float
    note: Optional[str] = None


@dataclass(frozen=True)
class PendingApproval:
    """A call of a parked Exec that waits for an answer: its id (what `resume` answers), the
    tool, the input it would run with, and why it asks."""

    id: int
    tool: str
    input: Any
    why: str


@dataclass(frozen=True)
class Paused:
    """An Exec that parked: the handle `Session.resume` takes (good in this conversation),
    the calls it waits for, and the id of the Exec (as `Session.exec(id=...)` gave it)."""

    handle: str
    approvals: list[PendingApproval]
    exec_id: Optional[str] = None


def paused_from(report: dict[str, Any]) -> Paused:
    return Paused(
        handle=report["handle"],
        approvals=[PendingApproval(**approval) for approval in report["approvals"]],
        exec_id=report.get("exec_id"),
    )


@dataclass(frozen=True)
class ExecResult:
    """What one Exec (or one tool call) came to.

    `ok`: whether it succeeded; `value`: the script's returned value; `text`: what a model
    reads; `logs`: the console lines; `images`; `calls`: the nested calls' tools, in order;
    `call_details`: each with its outcome and time; `summary`: one line for a UI; `error`:
    why it failed; `paused`: set when it parked (see `Session.resume`); `messages`: what the
    calls' hooks reported."""

    ok: bool
    value: Any
    text: str
    logs: list[str] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    call_details: list[CallDetail] = field(default_factory=list)
    summary: str = ""
    error: Optional[ExecError] = None
    paused: Optional[Paused] = None
    messages: list[str] = field(default_factory=list)


def result_from(report: dict[str, Any]) -> ExecResult:
    """An `ExecResult` from the library's report of a call."""
    error = report.get("error")
    paused = report.get("paused")
    return ExecResult(
        ok=report["ok"],
        value=report.get("value"),
        text=report["text"],
        logs=report.get("logs", []),
        images=[Image(mime_type=image["mimeType"], base64=image["bytes"]) for image in report.get("images", [])],
        calls=report.get("calls", []),
        call_details=[CallDetail(**detail) for detail in report.get("call_details", [])],
        summary=report.get("summary", ""),
        error=ExecError(stage=report.get("error_stage"), message=error) if error is not None else None,
        paused=paused_from(paused) if paused else None,
        messages=report.get("messages", []),
    )


@dataclass(frozen=True)
class Turn:
    """A turn's tool calls run: each call's result, in order, and the messages to append to
    the history (the tool results, then what the calls' hooks reported)."""

    results: list[ExecResult]
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class ApprovalRequest:
    """A call that asks before it runs: the tool, the input it would run with, why it asks
    (the rule and its file, or the mode), the rule "always" would save, and for a script's
    call the id of its Exec (`exec_id`) and its place among the script's calls (`call`)."""

    tool: str
    input: Any
    why: str
    rule: str
    exec_id: Optional[str] = None
    call: Optional[int] = None


@dataclass(frozen=True)
class InputRequest:
    """An MCP server's question during a call: the server, its message, and either a form
    (`kind == "form"`, with the JSON Schema of the values) or a page to open (`kind ==
    "url"`)."""

    server: str
    message: str
    kind: str
    schema: Optional[dict[str, Any]] = None
    url: Optional[str] = None
