"""`make demo`: ingest a short conversation into a fresh embedded store and recall from it."""

from __future__ import annotations

import tempfile

from engrammar import Config, Memory

CONVERSATION = [
    {"role": "user", "content": "I always write documentation before code."},
    {"role": "assistant", "content": "Docs first, then code. I'll keep that in mind."},
    {"role": "user", "content": "I find long meetings unproductive; I prefer async updates."},
    {"role": "user", "content": "My cat Miso knocks my coffee over every morning."},
    {"role": "user", "content": "We deploy the payments service on Thursdays only."},
]

QUESTIONS = [
    "How do you approach software projects?",
    "How should I share a status update with you?",
    "Do you have pets?",
    "When can we ship the payments change?",
]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, Memory(Config(path=folder)) as mem:
        ids = mem.add(CONVERSATION, user_id="alice", session_id="s1")
        print(f"Added {len(ids)} memories for alice (embedded store in {folder}).\n")
        for question in QUESTIONS:
            result = mem.recall(question, user_id="alice", limit=2)
            print(f"Q: {question}")
            for item in result.memories:
                print(f"   {item.score:.3f}  {item.content}")
            print()


if __name__ == "__main__":
    main()
