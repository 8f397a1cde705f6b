"""The MCP server: engrammar's tools for agents, over stdio or streamable HTTP.

Tools are plain typed functions; the SDK derives their input schemas from the annotations.
Each returns a readable text block (what a model reads) plus structured content (what a
program reads). An engrammar error becomes an MCP tool error whose text names the problem.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from .._ops import Operations, Principal
from ..errors import EngrammarError
from ..memory import Memory

__all__ = ["PRINCIPAL_KEY", "build_mcp_server"]

#: Where the HTTP authentication layer leaves the caller's principal in the ASGI scope.
PRINCIPAL_KEY = "engrammar.principal"

INSTRUCTIONS = """\
engrammar is long-term memory that learns from feedback.
Typical loop: memory_recall before answering (put `formatted` into your context), answer,
then memory_feedback with `response` set to your answer so the memories that helped are
strengthened. Store what the user says with memory_add. When the user corrects, adopts or
rejects your output, record it with memory_create_feedback_event so the next agent starts
from that decision. Scope every call with user_id (and agent_id / session_id when useful)."""


class Message(BaseModel):
    """One message to remember."""

    model_config = ConfigDict(extra="forbid")

    role: Annotated[
        Literal["user", "assistant", "system", "tool"], Field(description="Who said it.")
    ] = "user"
    content: Annotated[str, Field(description="What was said.")]
    name: Annotated[str | None, Field(description="Speaker's name, if known.")] = None
    timestamp: Annotated[
        str | float | None,
        Field(description="When it was said: ISO-8601 or epoch seconds. Default: now."),
    ] = None
    kind: Annotated[
        Literal["message", "fact", "decision", "preference", "event"] | None,
        Field(description="Overrides the call's kind for this message."),
    ] = None
    metadata: Annotated[dict[str, Any] | None, Field(description="Extra JSON data.")] = None


UserId = Annotated[
    str | None, Field(description="The end user the memory belongs to (e.g. 'alice').")
]
AgentId = Annotated[str | None, Field(description="The agent that acts (e.g. 'codex').")]
SessionId = Annotated[str | None, Field(description="A conversation or task id.")]
Workspace = Annotated[
    str | None,
    Field(
        description="Workspace (tenant). Leave empty to use your own; over HTTP an API key "
        "reaches only its own workspace."
    ),
]
Limit = Annotated[int | None, Field(description="How many memories to return (default 10).", ge=1)]
Query = Annotated[str, Field(description="What you need to know, in plain words.")]


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


def _listing(items: list[dict[str, Any]]) -> str:
    lines = []
    for i, item in enumerate(items, 1):
        memory = item["memory"]
        lines.append(f"{i}. [{item['score']:.3f}] {memory['content']}  (id {memory['id']})")
    return "\n".join(lines)


def build_mcp_server(memory: Memory, default: Principal) -> MCPServer[Any]:
    """The MCP server over ``memory``.

    Args:
        memory: the memory every tool acts on.
        default: the principal of calls without an HTTP request (stdio).
    """
    server: MCPServer[Any] = MCPServer(
        "engrammar",
        title="engrammar memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    def ops(ctx: Context) -> Operations:
        request = ctx.request_context.request
        principal = default
        if request is not None:
            found = getattr(request, "scope", {}).get(PRINCIPAL_KEY)
            if not isinstance(found, Principal):
                # The HTTP app always authenticates first; reaching here means it was bypassed.
                raise ToolError("AuthError: this request carries no authenticated principal")
            principal = found
        return Operations(memory, principal)

    @server.tool()
    def memory_add(
        ctx: Context,
        content: Annotated[
            str | None, Field(description="One thing to remember (a user message).")
        ] = None,
        messages: Annotated[
            list[Message] | None,
            Field(description="Several messages, in order, instead of content."),
        ] = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Extra JSON data kept with each memory.")
        ] = None,
        kind: Annotated[
            Literal["message", "fact", "decision", "preference", "event"],
            Field(description="What the memory is."),
        ] = "message",
    ) -> CallToolResult:
        """Remember what was said: give `content` (one message) or `messages` (a conversation).

        Scope it with user_id (and agent_id / session_id). Returns the ids of the stored
        memories; an exact duplicate in the same scope returns the id it already has.
        """
        msgs = [m.model_dump(exclude_none=True) for m in messages] if messages else None
        data = _run(
            lambda: ops(ctx).add(
                messages=msgs,
                content=content,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
                metadata=metadata,
                kind=kind,
            )
        )
        return _result(f"Stored {len(data['ids'])} memories: {', '.join(data['ids'])}", data)

    @server.tool()
    def memory_recall(
        ctx: Context,
        query: Query,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
        limit: Limit = None,
    ) -> CallToolResult:
        """Recall what matters before you answer: ranked memories, graph paths, conflicts.

        Put the returned text (`formatted`) into your context. Keep `recall_id`: pass your
        final answer to memory_feedback (argument `response`) to teach engrammar what helped.
        """
        data = _run(
            lambda: ops(ctx).recall(
                query=query,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
                limit=limit,
            )
        )
        body = data["formatted"] or "No memories matched."
        return _result(f"{body}\n\n(recall_id {data['recall_id']})", data)

    @server.tool()
    def memory_search(
        ctx: Context,
        query: Query,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
        limit: Limit = None,
    ) -> CallToolResult:
        """Search memories by meaning and keywords; a ranked list with scores and ids.

        Unlike memory_recall this records nothing and follows no graph paths: use it to find
        a memory's id (to forget it or rate it) or to browse.
        """
        data = _run(
            lambda: ops(ctx).search(
                query=query,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
                limit=limit,
            )
        )
        return _result(_listing(data["results"]) or "No memories matched.", data)

    @server.tool()
    def memory_forget(
        ctx: Context,
        memory_id: Annotated[
            str | list[str] | None,
            Field(description="The id (or ids) to delete. Omit to delete a whole scope."),
        ] = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
    ) -> CallToolResult:
        """Delete memories for good, with the graph links they own.

        Give memory_id (from memory_search) to delete specific memories, or only scope keys
        (e.g. user_id) to delete everything of that scope. Returns how many were deleted.
        """
        data = _run(
            lambda: ops(ctx).forget(
                memory_id=memory_id,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
            )
        )
        return _result(f"Deleted {data['deleted']} memories.", data)

    return server
