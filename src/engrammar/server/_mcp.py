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
strengthened (add memory_id + verdict to rate a memory that was right or wrong). Store what
the user says with memory_add. When the user corrects, adopts or rejects your output, record
it with memory_create_feedback_event so the next agent starts from that decision. Scope
every call with user_id (and agent_id / session_id when useful)."""


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
        return await super().call_tool(name, arguments, context)


def build_mcp_server(memory: Memory, default: Principal) -> MCPServer[Any]:
    """The MCP server over ``memory``.

    Args:
        memory: the memory every tool acts on.
        default: the principal of calls without an HTTP request (stdio).
    """
    server: MCPServer[Any] = _StrictServer(
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

    # -- decisions and feedback (seed 003) -----------------------------------------------------
    @server.tool()
    def memory_create_feedback_event(
        ctx: Context,
        input_context: Annotated[
            str, Field(description="What you were asked or working on (the context).")
        ],
        ai_output: Annotated[str, Field(description="What you (the agent) produced.")],
        state: Annotated[
            Literal["corrected", "adopted", "rejected"],
            Field(description="What the user did with your output."),
        ],
        user_reaction: Annotated[
            str | None, Field(description="How the user reacted, in their words or yours.")
        ] = None,
        user_correction: Annotated[
            str | None, Field(description="The user's correction, as they said it.")
        ] = None,
        corrected_output: Annotated[
            str | None, Field(description="The corrected version of your output.")
        ] = None,
        reason: Annotated[str | None, Field(description="Why the user decided so.")] = None,
        agent_id: AgentId = None,
        workspace: Workspace = None,
        source_event_id: Annotated[
            str | None,
            Field(
                description="Your own id for this event: resending the same value in the same "
                "workspace returns the existing event instead of a duplicate."
            ),
        ] = None,
        user_id: UserId = None,
        session_id: SessionId = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Extra JSON data.")] = None,
    ) -> CallToolResult:
        """Record what happened to your output: the user corrected, adopted or rejected it.

        Call this whenever the user changes or judges what you produced. The corrected (or
        adopted) version becomes the standing decision: the next memory_recall for a similar
        context surfaces it first, with the reason; a rejected output is demoted. A
        `corrected` event needs corrected_output or user_correction.
        """
        data = _run(
            lambda: ops(ctx).create_feedback_event(
                input_context=input_context,
                ai_output=ai_output,
                state=state,
                user_reaction=user_reaction,
                user_correction=user_correction,
                corrected_output=corrected_output,
                reason=reason,
                agent_id=agent_id,
                workspace=workspace,
                source_event_id=source_event_id,
                user_id=user_id,
                session_id=session_id,
                metadata=metadata,
            )
        )
        return _result(f"Recorded feedback event {data['id']} ({data['state']}).", data)

    @server.tool()
    def memory_create_decision_review(
        ctx: Context,
        event_id: Annotated[
            str, Field(description="The feedback event reviewed (the id it was created with).")
        ],
        final_decision: Annotated[
            Literal["corrected", "adopted", "rejected"],
            Field(
                description="The verdict now. If it differs from the event's state, the "
                "review marks the event reversed and the other output stands from now on."
            ),
        ],
        outcome: Annotated[
            Literal["success", "partial", "failure", "unknown"],
            Field(description="How the decision turned out."),
        ] = "unknown",
        confidence: Annotated[
            float, Field(description="How sure the review is, 0 to 1.", ge=0, le=1)
        ] = 1.0,
        reason: Annotated[str | None, Field(description="Why.")] = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        workspace: Workspace = None,
    ) -> CallToolResult:
        """Review an earlier feedback event: the final decision, its outcome, your confidence.

        Use it when a decision is revisited later (it worked, it failed, the user changed
        their mind). A different final_decision reverses the event's effect on recall.
        """
        data = _run(
            lambda: ops(ctx).create_decision_review(
                event_id=event_id,
                final_decision=final_decision,
                outcome=outcome,
                confidence=confidence,
                reason=reason,
                user_id=user_id,
                agent_id=agent_id,
                workspace=workspace,
            )
        )
        flag = "reversed" if data["reversed"] else "confirmed"
        return _result(f"Recorded decision review {data['id']} ({flag}).", data)

    @server.tool()
    def memory_create_preference_pair(
        ctx: Context,
        context: Annotated[str, Field(description="The situation both outputs answered.")],
        accepted_output: Annotated[str, Field(description="The output that was preferred.")],
        rejected_output: Annotated[str, Field(description="The output that was turned down.")],
        weight: Annotated[
            float, Field(description="How much this pair counts, above 0 up to 10.", gt=0, le=10)
        ] = 1.0,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
    ) -> CallToolResult:
        """Record that one output was preferred over another for the same context.

        For similar contexts the accepted output is surfaced and lifted, and memories that
        repeat the rejected output are lowered.
        """
        data = _run(
            lambda: ops(ctx).create_preference_pair(
                context=context,
                accepted_output=accepted_output,
                rejected_output=rejected_output,
                weight=weight,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
            )
        )
        return _result(f"Recorded preference pair {data['id']}.", data)

    @server.tool()
    def memory_log_event(
        ctx: Context,
        kind: Annotated[
            str, Field(description="What happened, as a short name: 'checkpoint', 'tool_run'.")
        ],
        payload: Annotated[
            dict[str, Any] | None, Field(description="Any JSON data about the event.")
        ] = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
    ) -> CallToolResult:
        """Put any other event on record (a checkpoint, a tool run, a milestone)."""
        data = _run(
            lambda: ops(ctx).log_event(
                kind=kind,
                payload=payload,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
            )
        )
        return _result(f"Logged event {data['id']} ({data['kind']}).", data)

    @server.tool()
    def memory_feedback(
        ctx: Context,
        memory_id: Annotated[
            str | None,
            Field(description="The memory you rate (ids come with recall/search results)."),
        ] = None,
        verdict: Annotated[
            Literal["accepted", "rejected", "corrected"] | None,
            Field(description="With memory_id: whether it helped, was wrong, or needed a fix."),
        ] = None,
        correction: Annotated[
            str | None,
            Field(description="With 'corrected': the right content; it is stored as a fact."),
        ] = None,
        recall_id: Annotated[
            str | None,
            Field(
                description="The recall this is about: a rating then counts for similar "
                "queries, and `response` acts on this recall instead of your latest one."
            ),
        ] = None,
        response: Annotated[
            str | None,
            Field(
                description="Your final reply after memory_recall: recalled paths that agree "
                "with it are strengthened, the others weakened (once per recall)."
            ),
        ] = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: SessionId = None,
        workspace: Workspace = None,
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

        def both() -> dict[str, Any]:
            o = ops(ctx)
            scope = {
                "user_id": user_id,
                "agent_id": agent_id,
                "session_id": session_id,
                "workspace": workspace,
            }
            out: dict[str, Any] = {"rating": None, "alignment": None}
            if memory_id is not None:
                out["rating"] = o.rate_memory(
                    memory_id=memory_id,
                    verdict=verdict,
                    correction=correction,
                    recall_id=recall_id,
                    **scope,
                )
            if response is not None:
                out["alignment"] = o.feedback(response=response, recall_id=recall_id, **scope)
            return out

        data = _run(both)
        lines = []
        if data["rating"] is not None:
            lines.append(f"Rated memory {memory_id}: {verdict} (rating {data['rating']['id']}).")
        if data["alignment"] is not None:
            a = data["alignment"]
            lines.append(
                a.get("message")
                or f"Strengthened {a['strengthened']} and weakened {a['weakened']} graph links."
            )
        return _result(" ".join(lines), data)

    return server
