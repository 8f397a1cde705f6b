"""`make demo`: the whole loop on a fresh embedded store with the real (offline) model.

Add a short conversation, recall, feed the assistant's replies back over a few rounds, and
watch the edge weights and the ranking change; then a contradiction is flagged and resolved.
"""

from __future__ import annotations

import tempfile

from engrammar import Config, Memory, RecallResult
from engrammar.recall.format import score_breakdown

SESSIONS = {
    "monday": [
        "On weekends I go bouldering at the climbing gym.",
        "My favourite route there is a purple overhang problem.",
    ],
    "tuesday": [
        "On Sundays I bake sourdough bread for the neighbours.",
        "Baking bread is how I unwind after a long week.",
    ],
    "wednesday": [
        "Saturday mornings are for grocery shopping and laundry.",
        "I work as a nurse on the night shift.",
        "My car needs new tyres before winter.",
        "I read science fiction novels before bed.",
    ],
}
QUESTION = "What do you like doing on weekends?"
# What the assistant answered each time: it keeps building on the climbing memories.
REPLY = (
    "You love bouldering at the climbing gym on weekends, especially that purple overhang route."
)
ROUNDS = 4


def show_ranking(title: str, result: RecallResult, mark: set[str]) -> list[str]:
    print(title)
    for rank, item in enumerate(result.memories, 1):
        star = "*" if item.id in mark else " "
        print(f" {star}{rank:2d}. {score_breakdown(item.score, item.components)}  {item.content}")
    return [m.id for m in result.memories]


def path_pairs(result: RecallResult) -> set[tuple[str, str]]:
    return {(p.nodes[i], p.nodes[i + 1]) for p in result.paths for i in range(len(p.kinds))}


def show_edges(mem: Memory, pairs: set[tuple[str, str]], texts: dict[str, str]) -> None:
    edges = mem.store.edges_from(mem.config.workspace, sorted({a for a, _ in pairs}))
    for e in sorted(edges, key=lambda e: (texts[e.src], texts[e.dst], e.kind)):
        if (e.src, e.dst) in pairs:
            print(f"   {e.weight:.3f}  {e.kind:<9} {texts[e.src][:38]:<38} -> {texts[e.dst][:38]}")


def main() -> None:
    print(
        "Each score below adds up: relevance (how well the memory matches) + graph "
        "(graph_weight x support along\nmemory links) + learned (what feedback has taught).\n"
    )
    with tempfile.TemporaryDirectory() as folder, Memory(Config(path=folder)) as mem:
        for session, messages in SESSIONS.items():
            turns = [{"role": "user", "content": text} for text in messages]
            mem.add(turns, user_id="alice", session_id=session)
        texts = {m.id: m.content for m in mem.list(user_id="alice")}
        print(f"Added {len(texts)} memories for alice in {len(SESSIONS)} sessions ({folder}).\n")
        print(f"Q: {QUESTION}\nA: {REPLY}\n")

        watch = {
            i for i, t in texts.items() if t in (SESSIONS["monday"][1], SESSIONS["tuesday"][1])
        }
        first = mem.recall(QUESTION, user_id="alice")
        before = show_ranking(
            "Ranking before feedback (* = the two memories to watch):", first, watch
        )
        pairs = path_pairs(first)
        print("Edge weights on the recalled paths before:")
        show_edges(mem, pairs, texts)

        result = first
        for round_no in range(1, ROUNDS + 1):
            stats = mem.feedback(response=REPLY, user_id="alice")
            print(
                f"\nfeedback round {round_no}: strengthened {stats['strengthened']} and weakened "
                f"{stats['weakened']} links; learned: up for {len(stats['drawn_on'])} memories "
                f"the reply drew on, down for {len(stats['left'])} it left"
            )
            result = mem.recall(QUESTION, user_id="alice")
        print()
        after = show_ranking(f"Ranking after {ROUNDS} rounds:", result, watch)
        print("The same edges after:")
        show_edges(mem, pairs, texts)
        print("\nRank changes:")
        for memory_id in before:
            old_rank, new_rank = before.index(memory_id) + 1, after.index(memory_id) + 1
            if old_rank != new_rank:
                print(f"   {old_rank} -> {new_rank}  {texts[memory_id]}")
        route = next(i for i in watch if "route" in texts[i])
        why = mem.explain(QUESTION, route, user_id="alice")
        c = why["components"]
        print(
            f"\nexplain(route): rank {why['rank']}, vector {c['vector']:.3f}, keyword "
            f"{c['keyword']:.3f}, relevance {c['relevance']:.3f}, graph {c['graph']:.3f} over "
            f"{c['graph_hops']} hop(s) with edge weight {c['graph_edge_weight']:.3f}"
        )

        print("\nA contradiction, flagged and resolved by the reply:")
        mem.add("I live in Paris.", user_id="alice", session_id="thursday", timestamp=1.7e9)
        mem.add("I moved to Berlin last month.", user_id="alice", session_id="friday")
        where = mem.recall("Where do you live?", user_id="alice", limit=3)
        print("\n".join("   " + line for line in where.formatted.splitlines()))
        stats = mem.feedback(
            response="Since you live in Berlin now, try Mauerpark.", user_id="alice"
        )
        texts = {m.id: m.content for m in mem.list(user_id="alice")}
        for side in stats["tensions"]:
            print(f"   reply agreed with: {texts[side['agreed']]!r} (edges into it strengthened)")
            print(f"   and not with:      {texts[side['other']]!r} (edges into it weakened)")


if __name__ == "__main__":
    main()
