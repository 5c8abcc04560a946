"""Python functions as tools: a name, a description, an input schema and an output schema
read from the function, and the wrapper the sandbox calls it through."""

from __future__ import annotations

import contextvars
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

# How many Execs deep the code running now is: 0 outside every tool, N inside a tool that a
# script N Execs deep called. `Session.exec` refuses past MAX_EXEC_DEPTH.
exec_depth: contextvars.ContextVar[int] = contextvars.ContextVar("exec_host_exec_depth", default=0)


@dataclass(frozen=True)
class CallInfo:
    """The call a tool serves: `exec_id`, the id of the Exec whose script made it (as given to
    `Session.exec(id=...)`) and `call`, its place among that script's calls; or `call_id` for
    a call made directly (`Session.call`). `depth`: how many Execs deep that script runs."""

    exec_id: Optional[str]
    call: Optional[int]
    depth: int
    call_id: Optional[str] = None


_current_call: contextvars.ContextVar[Optional[CallInfo]] = contextvars.ContextVar("exec_host_current_call", default=None)


def current_call() -> Optional[CallInfo]:
    """Inside a tool: the call it serves (see `CallInfo`); None elsewhere. A tool that needs
    to know which Exec called it (an adapter keeping state per model tool call, say) reads it
    here."""
    return _current_call.get()


def _enter(about: dict[str, Any]) -> None:
    """Marks the running tool's context with the call it serves."""
    info = CallInfo(**about)
    _current_call.set(info)
    exec_depth.set(info.depth + 1)

#: How deep Execs may nest: a tool may start an Exec, whose script may call a tool that starts
#: another, this many levels down and no further (each level holds a sandbox while it waits).
MAX_EXEC_DEPTH = 3

_SPEC = "__exec_host_tool__"


def tool(
    function: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    schema: Optional[dict[str, Any]] = None,
    output_schema: Optional[dict[str, Any]] = None,
    read_only: bool = False,
) -> Any:
    """Describes a function given to `Session.open(tools=...)`, as a decorator (`@tool` or
    `@tool(read_only=True)`) or a call (`tool(fetch, name="get")`).

    `name` defaults to the function's name, `description` to its docstring, `schema` (the
    JSON Schema of the argument object, whose properties are passed as keyword arguments) to
    one read from its signature, `output_schema` to one read from its return annotation.
    `read_only=True` says it changes nothing, so the permission mode `default` runs it
    without asking (other tools ask, or need an allow rule). Returns a wrapper that calls the
    function; the function itself is left as it was."""

    def mark(marked: Callable[..., Any]) -> Callable[..., Any]:
        given = {"name": name, "description": description, "schema": schema, "output_schema": output_schema, "read_only": read_only}
        # A wrapper, never the function itself: one function may be given under two names.
        if inspect.iscoroutinefunction(marked):

            @functools.wraps(marked)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                return await marked(*args, **kwargs)

        else:

            @functools.wraps(marked)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                return marked(*args, **kwargs)

        setattr(wrapper, _SPEC, {**getattr(marked, _SPEC, {}), **{key: value for key, value in given.items() if value}})
        return wrapper

    return mark(function) if function is not None else mark


_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    dict: {"type": "object"},
    list: {"type": "array"},
    type(None): {"type": "null"},
}


def _schema_of(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation, for the subset read without pydantic: str, int,
    float, bool, None, list[X], dict[str, X], Optional[X], X | Y and Literal[...]. Anything
    else accepts any value."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation in _JSON_TYPES:
        return dict(_JSON_TYPES[annotation])
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is list and arguments:
        return {"type": "array", "items": _schema_of(arguments[0])}
    if origin is dict and len(arguments) == 2:
        return {"type": "object", "additionalProperties": _schema_of(arguments[1])}
    if origin is typing.Literal:
        return {"enum": list(arguments)}
    if origin is typing.Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        return {"anyOf": [_schema_of(argument) for argument in arguments]}
    return {}


def _pydantic() -> Any:
    try:
        import pydantic
    except ImportError:
        return None
    return pydantic


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    return [
        parameter
        for parameter in inspect.signature(function).parameters.values()
        if parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def input_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The input schema of `function` from its signature: one property per parameter, typed
    from its annotation, required unless it has a default. With pydantic installed, its
    `TypeAdapter` reads the annotations (models, dataclasses, constraints); otherwise the
    documented subset (`str`, `int`, `float`, `bool`, `None`, `list[X]`, `dict[str, X]`,
    `Optional[X]`, `X | Y`, `Literal[...]`) is read and anything else accepts any value."""
    hints = typing.get_type_hints(function)
    pydantic = _pydantic()
    properties: dict[str, Any] = {}
    required: list[str] = []
    definitions: dict[str, Any] = {}
    for parameter in _parameters(function):
        annotation = hints.get(parameter.name, parameter.annotation)
        if pydantic is not None and annotation is not inspect.Parameter.empty:
            schema = pydantic.TypeAdapter(annotation).json_schema(ref_template="#/$defs/{model}")
            definitions.update(schema.pop("$defs", {}))
        else:
            schema = _schema_of(annotation)
        if parameter.default is not inspect.Parameter.empty:
            try:
                import json

                json.dumps(parameter.default)
                schema["default"] = parameter.default
            except (TypeError, ValueError):
                pass
        else:
            required.append(parameter.name)
        properties[parameter.name] = schema
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if definitions:
        schema["$defs"] = definitions
    return schema


def output_schema(function: Callable[..., Any]) -> Optional[dict[str, Any]]:
    """The schema of what `function` returns, from its return annotation; None without one
    (or for `None` and `Any`)."""
    annotation = typing.get_type_hints(function).get("return", inspect.Signature.empty)
    if annotation in (inspect.Signature.empty, None, type(None), Any):
        return None
    pydantic = _pydantic()
    if pydantic is not None:
        return pydantic.TypeAdapter(annotation).json_schema(mode="serialization")
    schema = _schema_of(annotation)
    return schema or None


def _plain(value: Any) -> Any:
    """What a tool returned, as plain data where pydantic knows how (models, dataclasses,
    dates); anything else is passed on as it is, and refused there unless it is plain."""
    pydantic = _pydantic()
    if pydantic is None or value is None or isinstance(value, (str, int, float, bool, list, dict, tuple)):
        return value
    try:
        return pydantic.TypeAdapter(type(value)).dump_python(value, mode="json")
    except Exception:  # not something pydantic can dump: the strict check says why
        return value


def spec(function: Callable[..., Any]) -> tuple[Any, ...]:
    """What the sandbox is told of a Python function, and the wrapper it calls: with the
    script's argument object as keyword arguments (validated by pydantic when it is
    installed), marking how many Execs deep the call is."""
    given = getattr(function, _SPEC, {})
    name = given.get("name") or function.__name__
    description = given.get("description") or inspect.getdoc(function) or name
    schema = given.get("schema") or input_schema(function)
    returns = given.get("output_schema") or (None if given.get("schema") else output_schema(function))
    is_async = inspect.iscoroutinefunction(function)
    pydantic = _pydantic()
    validated = function
    if pydantic is not None and not given.get("schema"):
        validated = pydantic.validate_call(function)

    if is_async:

        async def called(arguments: dict[str, Any], about: dict[str, Any]) -> Any:
            _enter(about)  # the task's own context
            return _plain(await validated(**arguments))

    else:

        def called(arguments: dict[str, Any], about: dict[str, Any]) -> Any:
            context = contextvars.copy_context()
            context.run(_enter, about)
            return _plain(context.run(validated, **arguments))

    return (name, description, schema, returns, called, is_async, bool(given.get("read_only", False)))
