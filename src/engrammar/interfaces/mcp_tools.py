"""The MCP server: engrammar's tools for agents, over stdio or streamable HTTP.

Tools are generated from the operation table (:mod:`.operations`): each becomes a typed function
whose signature the SDK turns into the input schema; ``memory_feedback`` (rate a memory and/or
learn from a reply) is the one written by hand.
Each returns a readable text block (what a model reads) plus structured content (what a
program reads). An engrammar error becomes an MCP tool error whose text names the problem.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import time
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from .. import __version__, deadline
from ..engine.validate import shown
from ..errors import EngrammarError
from ..memory import Memory
from ..models import KINDS, RATING_VERDICTS, ROLES
from .limits import CostBudget, request_cost
from .op_params import AGENT, SESSION, USER, WORKSPACE
from .operations import (
    OPERATIONS,
    Budget,
    Operation,
    Param,
    Principal,
    dispatch,
    feedback_over_budget,
    operation,
)
from .texts import feedback_summary

__all__ = ["PRINCIPAL_KEY", "build_mcp_server", "run_stdio"]

#: Where the HTTP authentication layer leaves the caller's principal in the ASGI scope.
PRINCIPAL_KEY = "engrammar.principal"

INSTRUCTIONS = """\
engrammar is long-term memory that learns from feedback.
Typical loop: memory_recall before answering (put `formatted` into your context), answer,
then memory_feedback with `response` set to your answer so the memories that helped are
strengthened (add memory_id + verdict to rate a memory that was right or wrong). Store what
the user says with memory_add. When the user corrects, adopts or rejects your output, record
it with memory_create_feedback_event so the next agent starts from that decision. Scope
every call with user_id (and agent_id / session_id when useful)."""


class Message(BaseModel):
    """One message to remember: {role, content}, or as the OpenAI / Anthropic APIs write it
    (other fields of those formats are accepted too and read by engrammar), or an OpenAI
    Responses item without a role (function_call, function_call_output, reasoning, ...)."""

    # Fields of the chat formats beyond these go through to engrammar's own checks.
    model_config = ConfigDict(extra="allow")

    role: Annotated[
        Literal[(*ROLES, "developer", "function")],  # type: ignore[valid-type]
        Field(description="Who said it."),
    ] = "user"
    content: Annotated[
        str | list[dict[str, Any] | str] | None,
        Field(
            description="What was said: text, or a list of content parts / blocks (text, "
            "image_url, tool_use, tool_result, ...). Null with tool_calls."
        ),
    ] = None
    tool_calls: Annotated[
        list[dict[str, Any]] | None,
        Field(description="OpenAI assistant tool calls; remembered as readable text."),
    ] = None
    tool_call_id: Annotated[
        str | None, Field(description="On a role 'tool' message: the call it answers.")
    ] = None
    name: Annotated[str | None, Field(description="Speaker's name, if known.")] = None
    timestamp: Annotated[
        str | float | None,
        Field(description="When it was said: ISO-8601 or epoch seconds. Default: now."),
    ] = None
    kind: Annotated[
        Literal[KINDS] | None,  # type: ignore[valid-type]
        Field(description="Overrides the call's kind for this message."),
    ] = None
    metadata: Annotated[dict[str, Any] | None, Field(description="Extra JSON data.")] = None


_UserId = Annotated[str | None, Field(description=USER.doc, strict=True)]
_AgentId = Annotated[str | None, Field(description=AGENT.doc, strict=True)]
_SessionId = Annotated[str | None, Field(description=SESSION.doc, strict=True)]
_Workspace = Annotated[str | None, Field(description=WORKSPACE.doc, strict=True)]
_Response = Annotated[
    str | None, Field(description=operation("feedback").params[0].doc, strict=True)
]


def _annotation(param: Param) -> Any:
    """The typed annotation of a tool argument: its type, choices and bounds."""
    hint: Any = list[Message] | None if param.name == "messages" else param.type
    if param.choices is not None:
        hint = Literal[param.choices]
        hint = hint | None if param.default is None else hint
    low = param.low if not param.gt else None
    above = param.low if param.gt else None
    # Strict, as REST is: `limit: "5"` is a string, not a number (no silent coercion).
    # (pydantic cannot make a union of two types strict: `str | float` stays lax.)
    kinds = set(typing.get_args(param.type) or (param.type,)) - {type(None)}
    scalar = len(kinds) == 1 and kinds <= {str, int, float}
    strict = True if scalar and param.choices is None else None
    return Annotated[
        hint, Field(description=param.doc, ge=low, gt=above, le=param.high, strict=strict)
    ]


def _text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def _result(text: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _run(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return fn()
    except EngrammarError as exc:
        # A tool error the calling model can read and act on: the kind, then the problem.
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


class _StrictServer(MCPServer[Any]):
    """Refuses arguments a tool does not have, as the REST API does: silently dropping one (a
    misspelt ``user_id``, a ``timestamp`` the tool does not take) would lose what the caller
    meant without a word."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = set(tool.parameters.get("properties", {}))
            unknown = sorted(set(arguments) - known)
            if unknown:
                raise ToolError(
                    f"ValidationError: {unknown[0][:100]}: unknown argument; "
                    f"{name} takes {', '.join(sorted(known))}"
                )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # The SDK prefixes "Error executing tool NAME: " and, for arguments that do not
            # fit the schema, dumps pydantic's report with a URL. The model gets what the
            # interfaces document instead: the kind, the field, what to change.
            cause = exc.__cause__
            if isinstance(cause, PydanticValidationError):
                raise ToolError(_argument_error(cause)) from cause
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from cause
            raise


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "string": "a string",
    "str": "a string",
    "bool": "true or false",
    "dict": "an object (dict)",
    "list": "a list",
}


def _argument_error(exc: PydanticValidationError) -> str:
    """``ValidationError: field: problem`` for the first of pydantic's errors."""
    first = exc.errors()[0]
    field = ""
    for part in first["loc"]:
        field += f"[{part}]" if isinstance(part, int) else f".{part}" if field else str(part)
    ctx = first.get("ctx") or {}
    kind = first["type"]
    # The library's own words (engine.validate), so a refusal reads the same on every
    # interface: "limit: must be >= 1, got 0", "limit: must be an integer, got 'x'".
    got = shown(first.get("input"))
    if kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        problem = f"must be one of {', '.join(allowed)}; got {got}"
    elif kind == "missing":
        problem = "is required"
    elif kind.endswith("_type") or kind.endswith("_parsing"):
        wanted = _TYPE_WORDS.get(kind.split("_")[0], f"a {kind.split('_')[0]}")
        problem = f"must be {wanted}, got {got}"
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "")
        signs = {
            "greater_than_equal": ">=",
            "greater_than": ">",
            "less_than_equal": "<=",
            "less_than": "<",
        }
        problem = f"must be {signs[kind]} {bound}, got {got}"
    elif kind == "extra_forbidden":
        problem = "unknown key"
    else:
        problem = f"{first['msg'][:1].lower()}{first['msg'][1:]}"
    return f"ValidationError: {field or 'arguments'}: {problem}"


#: ``(ctx, principal, operation name, arguments)``: raises the ToolError of a call over its
#: budget (feedback writes over HTTP), else returns.
Gate = Callable[[Context, Principal, str, dict[str, Any]], None]


def _budget_gate(bucket: Budget | None, cost_budget: CostBudget | None = None) -> Gate:
    """The per-source limit on feedback writes (``feedback_over_budget``) and the per-key
    cost budget (``cost_budget_chars_per_s``) for calls that came over HTTP; stdio has one
    client, the process that started the server."""

    def gate(ctx: Context, principal: Principal, name: str, args: dict[str, Any]) -> None:
        request = ctx.request_context.request
        if request is None:
            return
        client = getattr(request, "client", None)
        if cost_budget is not None:
            who = (
                f"key:{principal.key_id}"
                if principal.key_id
                else "ip:" + (client.host if client else "?")
            )
            wait = cost_budget.spend(who, request_cost(args), time.monotonic())
            if wait > 0:
                raise ToolError(
                    "RateLimited: this API key's requests are over its cost budget "
                    f"(cost_budget_chars_per_s); retry in {max(1, math.ceil(wait))} s"
                )
        if bucket is None:
            return
        refused = feedback_over_budget(
            bucket, principal, name, args, client.host if client else "?"
        )
        if refused is not None:
            source, wait = refused
            raise ToolError(
                f"RateLimited: too many feedback writes from {source}; "
                f"retry in {max(1, math.ceil(wait))} s"
            )

    return gate


def _message(message: Message) -> dict[str, Any]:
    """A message as given: the role defaults to 'user' unless the message is an OpenAI
    Responses item (``type`` other than 'message'), which has none."""
    out = message.model_dump(exclude_none=True)
    if "role" not in message.model_fields_set and out.get("type", "message") != "message":
        del out["role"]
    return out


def _tool(
    op: Operation, principal_of: Callable[[Context], Principal], memory: Memory, gate: Gate
) -> Any:
    """The MCP tool of ``op``: a function typed from the table, rendering ``op.mcp_text``."""
    params = [p for p in op.params if p.mcp]

    def tool(ctx: Context, **args: Any) -> CallToolResult:
        if args.get("messages"):
            args["messages"] = [_message(m) for m in args["messages"]]
        given = {k: v for k, v in args.items() if v is not None or k in ("memory_id",)}

        def call() -> dict[str, Any]:
            principal = principal_of(ctx)
            gate(ctx, principal, op.name, given)
            # Over HTTP a call has the server's per-request deadline; on stdio, none.
            over_http = ctx.request_context.request is not None
            with deadline.within(memory.config.request_deadline_s if over_http else None):
                return dispatch(memory, principal, op.name, given)

        data = _run(call)
        render = op.mcp_text or _text
        return _result(render(data), data)

    kind = inspect.Parameter.KEYWORD_ONLY
    signature = [inspect.Parameter("ctx", kind, annotation=Context)]
    signature += [
        inspect.Parameter(
            p.name,
            kind,
            annotation=_annotation(p),
            **({} if p.required else {"default": p.default}),
        )
        for p in params
    ]
    tool.__signature__ = inspect.Signature(signature, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in signature} | {"return": CallToolResult}
    tool.__name__ = op.mcp or op.name
    return tool


def build_mcp_server(
    memory: Memory,
    default: Principal,
    feedback_bucket: Budget | None = None,
    cost_budget: CostBudget | None = None,
) -> MCPServer[Any]:
    """The MCP server over ``memory``.

    Args:
        memory: the memory every tool acts on.
        default: the principal of calls without an HTTP request (stdio).
        feedback_bucket: the per-source budget of feedback writes over HTTP (shared with the
            REST routes of the same app); ``None``: no limit.
        cost_budget: the per-key budget of characters to embed over HTTP (shared with the
            REST routes); ``None``: no budget.
    """
    gate = _budget_gate(feedback_bucket, cost_budget)
    server: MCPServer[Any] = _StrictServer(
        "engrammar",
        title="engrammar memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    def principal_of(ctx: Context) -> Principal:
        request = ctx.request_context.request
        if request is None:
            return default
        found = getattr(request, "scope", {}).get(PRINCIPAL_KEY)
        if not isinstance(found, Principal):
            # The HTTP app always authenticates first; reaching here means it was bypassed.
            raise ToolError("AuthError: this request carries no authenticated principal")
        return found

    for op in OPERATIONS:
        if op.mcp is not None:
            server.add_tool(
                _tool(op, principal_of, memory, gate),
                name=op.mcp,
                description=op.mcp_doc,
                annotations=ToolAnnotations.model_validate(op.hints) if op.hints else None,
            )

    @server.tool(annotations=ToolAnnotations(destructive_hint=False))
    def memory_feedback(
        ctx: Context,
        memory_id: Annotated[
            str | None,
            Field(
                description="The memory you rate (ids come with recall/search results).",
                strict=True,
            ),
        ] = None,
        verdict: Annotated[
            Literal[RATING_VERDICTS] | None,  # type: ignore[valid-type]
            Field(description="With memory_id: whether it helped, was wrong, or needed a fix."),
        ] = None,
        correction: Annotated[
            str | None,
            Field(
                description="With 'corrected': the right content; it is stored as a fact.",
                strict=True,
            ),
        ] = None,
        recall_id: Annotated[
            str | None,
            Field(
                description="The recall this is about: a rating then counts for similar "
                "queries, and `response` acts on this recall instead of your latest one.",
                strict=True,
            ),
        ] = None,
        response: _Response = None,
        user_id: _UserId = None,
        agent_id: _AgentId = None,
        session_id: _SessionId = None,
        workspace: _Workspace = None,
    ) -> CallToolResult:
        """Tell engrammar what helped. Two uses, alone or together:

        * memory_id + verdict: rate one memory as accepted, rejected or corrected. Accepted
          memories rise in later recalls, rejected ones sink, a correction surfaces instead.
        * response: pass the reply you gave after memory_recall; the memory graph learns
          which recalled paths it used (MemWire alignment feedback).
        """
        if memory_id is None and response is None:
            raise ToolError(
                "ValidationError: memory_id: give memory_id and verdict to rate a memory, "
                "and/or response to learn from your reply"
            )
        if (memory_id is None) != (verdict is None):
            missing = "verdict" if verdict is None else "memory_id"
            raise ToolError(f"ValidationError: {missing}: memory_id and verdict go together")
        scope = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}
        scope = {k: v for k, v in {**scope, "workspace": workspace}.items() if v is not None}

        def both() -> dict[str, Any]:
            principal = principal_of(ctx)
            out: dict[str, Any] = {"rating": None, "alignment": None}
            rate = {"memory_id": memory_id, "verdict": verdict, "correction": correction}
            rate = {**rate, "recall_id": recall_id, **scope}
            answer = {"response": response, "recall_id": recall_id, **scope}
            # Both parts count against the budget before either is written (all or nothing).
            if memory_id is not None:
                gate(ctx, principal, "rate_memory", rate)
            if response is not None:
                gate(ctx, principal, "feedback", answer)
            if memory_id is not None:
                out["rating"] = dispatch(memory, principal, "rate_memory", rate)
            if response is not None:
                out["alignment"] = dispatch(memory, principal, "feedback", answer)
            return out

        data = _run(both)
        lines = []
        if data["rating"] is not None:
            lines.append(f"Rated memory {memory_id}: {verdict} (rating {data['rating']['id']}).")
        if data["alignment"] is not None:
            lines.append(feedback_summary(data["alignment"]))
        return _result(" ".join(lines), data)

    _resources_and_prompts(server, memory, principal_of)
    return server


#: The resource template: a user's memories, newest last (what a client can attach as context).
MEMORIES_URI = "engrammar://{workspace}/users/{user_id}/memories"
_RECENT = 50


def _resources_and_prompts(
    server: MCPServer[Any], memory: Memory, principal_of: Callable[[Context], Principal]
) -> None:
    """What MCP advertises besides tools: a user's recent memories as a resource, and the
    recall -> answer -> feedback loop as a prompt."""

    @server.resource(
        MEMORIES_URI,
        name="user_memories",
        title="A user's recent memories",
        description=f"The newest {_RECENT} memories of one user in a workspace, oldest first.",
        mime_type="text/plain",
    )
    def user_memories(workspace: str, user_id: str, ctx: Context) -> str:
        def newest() -> dict[str, Any]:
            principal = principal_of(ctx)
            scope = {"user_id": user_id, "workspace": workspace}
            total = dispatch(memory, principal, "stats", scope)["memories"]
            page = {**scope, "limit": _RECENT, "offset": max(0, int(total) - _RECENT)}
            return dispatch(memory, principal, "list", page)

        listed = _run(newest)["memories"]
        if not listed:
            return f"No memories of {user_id} in {workspace}."
        return "\n".join(
            f"[{m['created_at_iso'][:19]}] {m['role']}: {m['content']}  (id {m['id']})"
            for m in listed
        )

    @server.prompt(
        name="recall_answer_feedback",
        title="Answer with memory",
        description="Answer a user with engrammar: recall first, answer, then report back.",
    )
    def recall_answer_feedback(user_id: str, question: str = "") -> str:
        asked = f" The question: {question}" if question else ""
        return (
            f"You are answering {user_id}.{asked}\n"
            f"1. Call memory_recall with the question and user_id={user_id!r}; read `formatted` "
            "and keep `recall_id`.\n"
            "2. Answer using what was recalled; where memories conflict, prefer the newer one "
            "and say so.\n"
            "3. Call memory_feedback with response=<your answer> (and recall_id) so the "
            "memories that helped are strengthened; rate a memory that was wrong with "
            "memory_id and verdict='rejected'.\n"
            f"4. Store anything new {user_id} told you with memory_add."
        )


def run_stdio(memory: Memory, workspace: str | None = None) -> None:
    """Serve the MCP tools over stdin/stdout until the client closes the stream."""
    principal = Principal(workspace=workspace or memory.config.workspace, fixed=False)
    build_mcp_server(memory, principal).run("stdio")
