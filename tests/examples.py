"""The examples of the README, declared once for the tests that use them."""

from __future__ import annotations

from typing import Any

# The feedback event of the README's "Decisions and feedback records": an agent's output, the
# person's correction and why, recorded by one agent for a workspace, with no user.
WEBHOOK_EVENT: dict[str, Any] = {
    "input_context": "Add retries to the webhook sender",
    "ai_output": "Retry every 30 seconds until it succeeds.",
    "user_reaction": "Changed the retry policy",
    "user_correction": "Use exponential backoff, at most 5 attempts. Don't retry 4xx.",
    "corrected_output": "Exponential backoff, max 5 attempts, skip 4xx.",
    "state": "corrected",
    "reason": "A 4xx means the request is wrong; sending it again won't fix it.",
    "agent_id": "codex",
    "workspace": "payments-api",
}
