"""Transcripts as agents hold them: OpenAI and Anthropic messages, built with the SDKs' own types.

The payloads are the ``openai`` and ``anthropic`` packages' types (response objects and request
TypedDicts), no network: what an agent has in hand when it pipes its conversation into ``add``.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import (
    Message,
    MessageParam,
    SearchResultBlockParam,
    TextBlock,
    ToolResultBlockParam,
    ToolUseBlock,
    Usage,
)
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseInputItemParam,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_function_web_search import ActionSearch
from openai.types.responses.response_output_item import McpCall
from openai.types.responses.response_reasoning_item import Summary

from engrammar import Memory, Skipped, ValidationError

pytestmark = pytest.mark.every_store


def _stored(mem: Memory, ids: list[str | None]) -> list[tuple[str, str, str, dict[str, Any]]]:
    out = []
    for memory_id in ids:
        if memory_id is not None:
            m = mem.get(memory_id)
            out.append((m.role, m.kind, m.content, m.metadata))
    return out


def test_an_openai_tool_conversation_goes_in_whole(mem: Memory) -> None:
    call = ChatCompletionMessageFunctionToolCall(
        id="call_abc",
        type="function",
        function=Function(name="get_weather", arguments='{"city": "Paris", "unit": "celsius"}'),
    )
    reply = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
    messages: list[ChatCompletionMessageParam | ChatCompletionMessage] = [
        {"role": "developer", "content": "You are a travel assistant."},
        ChatCompletionUserMessageParam(
            role="user",
            content=[
                {"type": "text", "text": "What is the weather in Paris today?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/paris.jpg"}},
            ],
        ),
        reply,  # the SDK's response object, as it came back
        ChatCompletionToolMessageParam(
            role="tool", tool_call_id="call_abc", content="18 degrees, sunny"
        ),
        ChatCompletionAssistantMessageParam(role="assistant", content="It is 18°C and sunny."),
        {"role": "user", "content": "   "},
    ]
    ids = mem.add(messages, user_id="alice", session_id="trip")
    assert ids.skipped == [Skipped(5, "empty")]
    assert ids[5] is None and len(ids) == 6
    assert _stored(mem, ids) == [
        ("system", "message", "You are a travel assistant.", {}),
        (
            "user",
            "message",
            "What is the weather in Paris today?",
            {"non_text_parts": [{"index": 1, "type": "image_url"}]},
        ),
        (
            "assistant",
            "event",
            'called tool get_weather with {"city": "Paris", "unit": "celsius"}',
            {"tool_calls": [{"id": "call_abc", "name": "get_weather"}]},
        ),
        (
            "tool",
            "event",
            "tool get_weather returned: 18 degrees, sunny",
            {"tool_results": [{"tool_call_id": "call_abc", "name": "get_weather"}]},
        ),
        ("assistant", "message", "It is 18°C and sunny.", {}),
    ]
    hits = mem.search("weather in Paris", user_id="alice")
    assert any("get_weather" in h.memory.content for h in hits)


def test_an_anthropic_tool_conversation_goes_in_whole(mem: Memory) -> None:
    response = Message(
        id="msg_01",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            TextBlock(type="text", text="I'll look up your order."),
            ToolUseBlock(
                type="tool_use", id="toolu_01", name="find_order", input={"order_id": "A-17"}
            ),
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=20),
    )
    result: ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": [{"type": "text", "text": "Order A-17 shipped on May 2."}],
    }
    messages: list[MessageParam | Message] = [
        {"role": "user", "content": "Where is my order A-17?"},
        response,  # the whole response object
        {"role": "user", "content": [result]},
        # A transcript that keeps the blocks as the SDK returned them, inside a dict.
        {"role": "assistant", "content": [TextBlock(type="text", text="It shipped on May 2.")]},
        {"role": "assistant", "content": []},
    ]
    ids = mem.add(messages, user_id="bob")
    assert ids.skipped == [Skipped(4, "empty")]
    assert _stored(mem, ids) == [
        ("user", "message", "Where is my order A-17?", {}),
        (
            "assistant",
            "message",
            'I\'ll look up your order.\ncalled tool find_order with {"order_id": "A-17"}',
            {"message_id": "msg_01", "tool_calls": [{"id": "toolu_01", "name": "find_order"}]},
        ),
        (
            "tool",
            "event",
            "tool find_order returned: Order A-17 shipped on May 2.",
            {"tool_results": [{"tool_call_id": "toolu_01", "name": "find_order"}]},
        ),
        ("assistant", "message", "It shipped on May 2.", {}),
    ]


def test_documents_thinking_and_images_are_read_or_noted(mem: Memory) -> None:
    ids = mem.add(
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "title": "Lease",
                        "source": {"type": "text", "media_type": "text/plain", "data": "Rent 900"},
                    },
                    {"type": "text", "text": "Summarise the lease."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "The rent is...", "signature": "sig"},
                    {"type": "text", "text": "The rent is 900 a month."},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
                ],
            },
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        ],
        user_id="carol",
    )
    assert ids.skipped == [Skipped(2, "no_text")]
    assert _stored(mem, ids) == [
        ("user", "message", "Lease\nRent 900\nSummarise the lease.", {}),
        (
            "assistant",
            "message",
            "The rent is 900 a month.",
            {"non_text_parts": [{"index": 0, "type": "thinking"}]},
        ),
        ("assistant", "message", "I can't help with that.", {}),
    ]


def test_search_results_handed_to_the_model_are_read(mem: Memory) -> None:
    """Anthropic search results (retrieved passages a user turn passes on) are text: title,
    source and text blocks; an empty one adds nothing."""
    found: SearchResultBlockParam = {
        "type": "search_result",
        "source": "https://wiki.example/leave",
        "title": "Leave policy",
        "content": [
            {"type": "text", "text": "Staff get 25 days of leave."},
            {"type": "text", "text": "Unused days carry over."},
        ],
    }
    blank: SearchResultBlockParam = {
        "type": "search_result",
        "source": "",
        "title": "",
        "content": [],
    }
    ids = mem.add(
        [
            {
                "role": "user",
                "content": [found, blank, {"type": "text", "text": "How much leave do I get?"}],
            }
        ],
        user_id="dana",
    )
    assert ids.skipped == []
    assert _stored(mem, ids) == [
        (
            "user",
            "message",
            "Leave policy - https://wiki.example/leave\nStaff get 25 days of leave.\n"
            "Unused days carry over.\nHow much leave do I get?",
            {},
        )
    ]


def test_an_openai_responses_run_goes_in_whole(mem: Memory) -> None:
    """What a Responses API run holds (the OpenAI Agents SDK's ``to_input_list()``): input
    items as dicts, output items as the SDK's objects. Calls and outputs are tool traffic,
    reasoning and hosted tools' items are skipped, nothing else is lost."""
    output: ResponseInputItemParam = {
        "type": "function_call_output",
        "call_id": "call_7",
        "output": "Order A-17 shipped on May 2.",
    }
    items: list[Any] = [
        {"role": "user", "content": "Where is my order A-17? I moved to Leeds in March."},
        ResponseReasoningItem(
            id="rs_1",
            type="reasoning",
            summary=[Summary(type="summary_text", text="Look the order up.")],
        ),
        ResponseFunctionToolCall(
            id="fc_1",
            type="function_call",
            call_id="call_7",
            name="find_order",
            arguments='{"order_id": "A-17"}',
            status="completed",
        ),
        output,
        ResponseFunctionWebSearch(
            id="ws_1",
            type="web_search_call",
            status="completed",
            action=ActionSearch(type="search", query="Royal Mail delays Leeds"),
        ),
        McpCall(
            id="mcp_1",
            type="mcp_call",
            server_label="crm",
            name="update_address",
            arguments='{"city": "Leeds"}',
            output="address updated",
        ),
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[
                ResponseOutputText(type="output_text", text="It shipped on May 2.", annotations=[])
            ],
        ),
        {"type": "custom_tool_call", "call_id": "call_8", "name": "notes", "input": "Leeds"},
        {"type": "custom_tool_call_output", "call_id": "call_8", "output": []},
    ]
    ids = mem.add(items, user_id="fay")
    assert ids.skipped == [Skipped(1, "no_text"), Skipped(4, "no_text"), Skipped(8, "empty")]
    assert _stored(mem, ids) == [
        ("user", "message", "Where is my order A-17? I moved to Leeds in March.", {}),
        (
            "assistant",
            "event",
            'called tool find_order with {"order_id": "A-17"}',
            {"message_id": "fc_1", "tool_calls": [{"id": "call_7", "name": "find_order"}]},
        ),
        (
            "tool",
            "event",
            "tool find_order returned: Order A-17 shipped on May 2.",
            {"tool_results": [{"tool_call_id": "call_7", "name": "find_order"}]},
        ),
        (
            "assistant",
            "event",
            'called tool update_address with {"city": "Leeds"}\n'
            "tool update_address returned: address updated",
            {
                "message_id": "mcp_1",
                "mcp_server": "crm",
                "tool_calls": [{"id": "mcp_1", "name": "update_address"}],
            },
        ),
        ("assistant", "message", "It shipped on May 2.", {"message_id": "msg_1"}),
        (
            "assistant",
            "event",
            "called tool notes with Leeds",
            {"tool_calls": [{"id": "call_8", "name": "notes"}]},
        ),
    ]
    # A misspelt key of an item is refused by name, like a message's.
    with pytest.raises(ValidationError) as err:
        mem.add(
            [{"type": "function_call", "call_id": "c", "name": "f", "argumnets": "{}"}],
            user_id="fay",
        )
    assert "argumnets" in str(err.value)
    with pytest.raises(ValidationError) as err:
        mem.add([{"type": "function_call_output", "output": "x"}], user_id="fay")
    assert err.value.field == "messages[0].call_id"


def test_long_messages_go_in_up_to_the_configured_limit(mem: Memory) -> None:
    pasted = "The contract says the deposit is refundable. " * 1_700  # ~76,000 characters
    ids = mem.add([{"role": "user", "content": pasted}, "Short one."], user_id="dave")
    assert mem.get(ids[0] or "").content == pasted
    with pytest.raises(ValidationError, match=r"limit is 1000000 \(max_content_chars\)") as info:
        mem.add(["fine", "x" * 1_000_001], user_id="dave")
    assert info.value.field == "messages[1].content"


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": "user", "content": [{"type": "text", "text": 3}]}, "messages[1].content[0].text"),
        ({"role": "user", "content": ["ok", 7]}, "messages[1].content[1]"),
        ({"role": "user", "content": [{"type": None}]}, "messages[1].content[0].type"),
        ({"role": "user", "content": {"type": "text"}}, "messages[1].content"),
        (
            {"role": "user", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
            "messages[1].content[0].name",
        ),
        (
            {"role": "user", "content": [{"type": "tool_result", "content": "x"}]},
            "messages[1].content[0].tool_use_id",
        ),
        ({"role": "assistant", "content": None, "tool_calls": "x"}, "messages[1].tool_calls"),
        (
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {}}]},
            "messages[1].tool_calls[0].function.name",
        ),
        ({"role": "tool", "tool_call_id": 5, "content": "x"}, "messages[1].tool_call_id"),
        (
            {"role": "user", "content": [{"type": "text", "text": "a\x00"}]},
            "messages[1].content[0].text",
        ),
        ({"role": "user", "type": "function_call", "content": "x"}, "messages[1].type"),
        ({"role": "robot", "content": "x"}, "messages[1].role"),
    ],
)
def test_malformed_parts_are_refused_by_field(
    mem: Memory, message: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        mem.add(["fine", message], user_id="erin")  # type: ignore[list-item]
    assert info.value.field == field
    assert mem.list(user_id="erin") == []


def test_a_call_with_nothing_to_store_is_refused(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="nothing to store") as info:
        mem.add(["", {"role": "assistant", "content": None}], user_id="fay")
    assert info.value.field == "messages"
    with pytest.raises(ValidationError, match="no text") as info:
        mem.add([{"role": "user", "content": [{"type": "input_audio"}]}], user_id="fay")
    assert info.value.field == "messages[0].content"


def test_failed_tool_results_and_legacy_function_messages(mem: Memory) -> None:
    ids = mem.add(
        [
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "lookup", "arguments": "not json"},
            },
            {"role": "function", "name": "lookup", "content": "no such user"},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_9",
                        "is_error": True,
                        "content": "timeout",
                    },
                    {"type": "text", "text": "Try again later then."},
                ],
            },
        ],
        user_id="gil",
    )
    assert [(role, kind, text) for role, kind, text, _ in _stored(mem, ids)] == [
        ("assistant", "event", "called tool lookup with not json"),
        ("tool", "event", "tool lookup returned: no such user"),
        ("user", "message", "tool failed: timeout\nTry again later then."),
    ]


def test_a_system_prompt_is_one_memory_and_no_answer_about_the_user(mem: Memory) -> None:
    """A transcript repeats its system prompt at the top of every conversation: it is stored
    once for the user, and it does not lead a question about the user's life that shares its
    words ("Where am I travelling?" against "You are a helpful travel assistant"); a question
    about the assistant's instructions still finds it."""
    brief = {
        "role": "system",
        "content": "You are a helpful travel assistant. Answer briefly and cite sources.",
    }
    facts = [
        "I'm planning a trip to Japan in April.",
        "My budget for the trip is 3000 dollars.",
        "I'm allergic to shellfish, so sushi restaurants worry me.",
    ]
    added = [
        mem.add([brief, {"role": "user", "content": fact}], user_id="erin", session_id=f"s{i}")
        for i, fact in enumerate(facts)
    ]
    assert len({ids[0] for ids in added}) == 1
    stored = mem.list(user_id="erin")
    assert [m.role for m in stored].count("system") == 1
    result = mem.recall("Where am I travelling?", user_id="erin")
    assert result.memories[0].memory.role == "user"
    asked = mem.recall("What were your instructions as a travel assistant?", user_id="erin")
    assert asked.memories[0].memory.role == "system"
