"""The web inspector in a real browser: Debian's headless Chromium driven by Playwright against
a real ``engrammar serve`` app on loopback, with the real model and API keys of two workspaces.

Screenshots of every page go to ``$ENGRAMMAR_UI_SCREENSHOTS`` (default ``build/ui-screenshots``,
not committed). Without Chromium the test is skipped, unless ``ENGRAMMAR_REQUIRE_BROWSER=1``
(CI, whose ``.ci/run`` installs it) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.keys import create_api_key
from serving import serve_in_thread

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRE = os.environ.get("ENGRAMMAR_REQUIRE_BROWSER") == "1"
SHOTS = Path(
    os.environ.get("ENGRAMMAR_UI_SCREENSHOTS")
    or Path(__file__).resolve().parent.parent / "build" / "ui-screenshots"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUERY = "When do payments deploys happen?"
# Close enough behind the top memory ("Payments deploys happen on Tuesdays after standup.",
# every query word together) for one bounded "wrong" rating to put it first.
OTHER_DEPLOY = "The payments service deploys on Tuesday mornings; hotfixes happen any day."

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _playwright() -> tuple[Any, Any]:
    reason = None
    if not Path(CHROMIUM).exists():
        reason = "Debian chromium is not installed (apt-get install chromium chromium-driver)"
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install 'engrammar[test]')"
    if reason is not None:
        if REQUIRE:
            pytest.fail(reason)
        pytest.skip(reason)
    return sync_playwright, expect


@pytest.fixture
def served(tmp_path: Path, minilm: MiniLMEmbedder) -> Iterator[dict[str, Any]]:
    # One person clicks "Wrong" a few times on purpose: each click counts (by default one
    # source's repeats within feedback_source_window_s count once, the poisoning bound that
    # tests/test_undo.py holds).
    config = Config(path=str(tmp_path / "store"), feedback_source_window_s=0)
    mem = Memory(config, embedder=minilm)
    alice = {"user_id": "alice", "workspace": "acme"}
    mem.add(content="I live in Paris.", **alice)
    mem.add(content="I moved to Berlin last year.", **alice)
    ops = {**alice, "agent_id": "ops"}
    mem.add(content=OTHER_DEPLOY, **ops)
    mem.add(content="Payments deploys happen on Tuesdays after standup.", **ops)
    mem.add(content="Deploy day for the payments service is Tuesday.", **ops, session_id="s1")
    mem.add(
        messages=[
            {"role": "user", "content": "I prefer tea over coffee."},
            {"role": "assistant", "content": "Noted: tea, not coffee."},
        ],
        **alice,
        session_id="s1",
    )
    mem.create_feedback_event(
        "Add retries to the webhook sender",
        "Retry every 30 seconds until it succeeds.",
        "corrected",
        corrected_output="Exponential backoff, max 5 attempts, skip 4xx.",
        reason="A 4xx means the request is wrong.",
        user_id="alice",
        workspace="acme",
    )
    mem.add(content="Globex secret: the launch code is 0000.", user_id="bob", workspace="globex")
    key_a = create_api_key(mem.store, "acme")[0]
    key_b = create_api_key(mem.store, "globex")[0]
    for url in serve_in_thread(mem):
        yield {"url": url, "key_a": key_a, "key_b": key_b, "mem": mem}
    mem.close()


def _shot(page: Any, name: str) -> None:
    """The whole page, and what a window of the current size shows (``-window``)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.screenshot(path=str(SHOTS / f"{name}-window.png"))


def _login(page: Any, url: str, key: str) -> None:
    page.goto(f"{url}/ui/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Open").click()
    page.wait_for_selector("#memory-table")


def _rank_of(page: Any, memory_id: str) -> int:
    ids = page.eval_on_selector_all("#recall-results > li", "els => els.map(e => e.dataset.id)")
    return int(ids.index(memory_id)) + 1


def test_inspector_pages_in_chromium(served: dict[str, Any], tmp_path: Path) -> None:
    sync_playwright, expect = _playwright()
    url = served["url"]
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            args=FLAGS,
            headless=True,
            viewport={"width": 1280, "height": 800},
        )
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # No request a page makes by itself is refused (a browser asks for /favicon.ico).
        refused: list[str] = []
        page.on(
            "response",
            lambda r: (
                refused.append(f"{r.status} {r.url}")
                if r.status in (401, 403) or (r.url.endswith("/favicon.ico") and r.status >= 400)
                else None
            ),
        )
        # The page keeps to its own Content-Security-Policy (no inline script or style).
        page.on(
            "console",
            lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None,
        )

        # -- login, scopes and memories ---------------------------------------------------
        page.goto(f"{url}/ui/")
        assert page.get_by_label("API key").is_visible()
        _login(page, url, served["key_a"])
        assert page.locator("#workspace-label").inner_text() == "workspace: acme"
        tree = page.locator("#scope-tree")
        tree.get_by_role("button", name="user alice").wait_for()
        assert "agent ops" in tree.inner_text() and "session s1" in tree.inner_text()
        assert "globex" not in page.content() and "launch code" not in page.content()
        tree.get_by_role("button", name="user alice").click()
        expect(page.locator("#memory-count")).to_contain_text("user_id=alice")
        page.get_by_label("Text").fill("berlin")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#memory-count")).to_have_text(re.compile(r"of 1$"))
        assert "I moved to Berlin last year." in page.locator("#memory-table").inner_text()
        page.get_by_role("button", name="History").first.click()
        expect(page.locator("#dialog td", has_text=re.compile("^add$"))).to_be_visible()
        page.keyboard.press("Escape")
        page.get_by_label("Text").fill("")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#memory-count")).to_have_text(re.compile(r"of [2-9]$"))
        _shot(page, "memories")

        # -- recall playground: rate from the UI and watch the ranking change -------------
        page.get_by_role("link", name="Recall").click()
        page.get_by_label("Query").fill(QUERY)
        page.get_by_role("button", name="Recall", exact=True).click()
        page.wait_for_selector("#recall-results > li")
        top = page.locator("#recall-results > li").first.get_attribute("data-id")
        assert top is not None
        bars = page.locator("#recall-results .bar").first.get_attribute("aria-label") or ""
        assert bars.startswith("score") and "relevance" in bars
        assert page.locator("#formatted").inner_text().strip()
        # Graph paths name memories by what they say, not by id.
        paths = page.locator("#recall-out").inner_text()
        assert not re.search(r"\b[0-9a-f]{32}\b", paths), paths
        _shot(page, "recall")
        page.get_by_role("button", name="Explain").first.click()
        expect(page.locator("#dialog").get_by_text("formula")).to_be_visible()
        _shot(page, "recall-explain")
        page.keyboard.press("Escape")
        out = page.locator("#recall-out")
        for _ in range(4):
            item = page.locator(f"#recall-results > li[data-id='{top}']")
            run = int(out.get_attribute("data-run") or "0")
            item.get_by_role("button", name="Wrong").click()
            expect(out).to_have_attribute("data-run", str(run + 1))
            if _rank_of(page, top) > 1:
                break
        assert _rank_of(page, top) > 1, "rating the top memory wrong never moved it down"
        moved = page.locator(f"#recall-results > li[data-id='{top}'] .move-down")
        assert re.match(r"▼ from \d", moved.inner_text())
        _shot(page, "recall-after-feedback")
        page.get_by_label("The agent's reply").fill("Payments deploys are on Tuesday mornings.")
        page.get_by_role("button", name="Send reply feedback").click()
        expect(page.locator("#status")).to_have_text(re.compile(r"^Feedback: "))

        # -- graph of the memory that moved ----------------------------------------------
        page.goto(f"{url}/ui/#/graph/{top}")
        page.wait_for_selector("#graph-svg path.edge", state="attached")
        assert page.locator("#graph-svg g.node").count() >= 2
        assert page.locator("#edge-table tbody tr").count() >= 1
        # The reply feedback above changed edge weights: their history is drawn.
        page.wait_for_selector("#edge-table svg path", state="attached")
        _shot(page, "graph")

        # -- learning: timeline, multiplier, rank shifts ---------------------------------
        page.get_by_role("link", name="Learning").click()
        page.wait_for_selector("#timeline-svg")
        timeline = page.locator("#timeline-table").inner_text()
        assert "memory_rating" in timeline and "feedback_event" in timeline
        assert "reply_signal" in timeline
        page.get_by_label("Memory id").fill(top)
        page.get_by_role("button", name="Show multiplier").click()
        expect(page.locator("#multiplier-svg")).to_have_attribute(
            "aria-label", re.compile(r"0\.\d")
        )
        page.wait_for_selector("#rank-svg line[stroke='#a61b1b']", state="attached")
        # Each dot says what its feedback said: the "Wrong" clicks are red, none is green.
        dots = page.eval_on_selector_all(
            "#timeline-svg circle",
            "els => els.map(e => [e.textContent, e.getAttribute('fill'), e.dataset.polarity])",
        )
        wrong = [d for d in dots if " rejected " in d[0]]
        assert wrong and all(d[1] == "#a61b1b" and d[2] == "wrong" for d in wrong), dots
        # The rated memory is named by what it says.
        rated = page.locator("#timeline-table tr", has_text="memory_rating").first.inner_text()
        assert "rejected “" in rated and not re.search(r"memory [0-9a-f]{8}", rated), rated
        _shot(page, "learning")

        # -- tensions: resolve one by hand, which records ratings -------------------------
        page.get_by_role("link", name="Tensions").click()
        card = page.locator(".tension-card").first
        card.wait_for()
        assert "Paris" in card.inner_text() and "Berlin" in card.inner_text()
        _shot(page, "tensions")
        berlin = card.locator(".side", has_text="Berlin")
        berlin.get_by_role("button", name="Keep this one").click()
        page.locator("#dialog").get_by_role("button", name="Resolve").click()
        expect(page.locator("#status")).to_have_text(re.compile(r"^Resolved"))
        page.locator(".tension-card .side", has_text="Berlin").get_by_text(
            "rated accepted"
        ).wait_for()
        ratings = httpx.get(
            f"{url}/v1/ratings",
            params={"user_id": "alice"},
            headers={"Authorization": f"Bearer {served['key_a']}"},
            timeout=60,
        ).json()["memory_ratings"]
        verdicts = {(r["verdict"], r["recall_id"]) for r in ratings}
        assert ("accepted", None) in verdicts and ("rejected", None) in verdicts

        # -- edit and forget, each after a confirmation -----------------------------------
        page.get_by_role("link", name="Memories").click()
        row = page.locator("#memory-table tbody tr", has_text="I prefer tea over coffee.")
        row.get_by_role("button", name="Edit").click()
        page.locator("#edit-content").fill("I prefer green tea over coffee.")
        page.locator("#edit-reason").fill("more precise")
        page.locator("#dialog").get_by_role("button", name="Save").click()
        row = page.locator("#memory-table tbody tr", has_text="I prefer green tea over coffee.")
        row.get_by_role("button", name="History").click()
        expect(page.locator("#dialog")).to_contain_text("more precise")
        page.keyboard.press("Escape")
        count = page.locator("#memory-count").inner_text()
        row = page.locator("#memory-table tbody tr", has_text="Noted: tea, not coffee.")
        row.get_by_role("button", name="Forget").click()
        page.locator("#dialog").get_by_role("button", name="Cancel").click()
        expect(page.locator("#memory-count")).to_have_text(count)
        assert len(served["mem"].list(user_id="alice", workspace="acme")) == 8
        row.get_by_role("button", name="Forget").click()
        page.locator("#dialog").get_by_role("button", name="Forget").click()
        expect(page.locator("#memory-count")).to_have_text(re.compile(r"of 7$"))
        assert "Noted: tea" not in page.locator("#memory-table").inner_text()

        # -- keyboard: skip link, then the nav, without a mouse ---------------------------
        page.goto(f"{url}/ui/#/memories")
        page.reload()  # a fresh document: focus starts at the top
        page.wait_for_selector("#memory-table")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip"
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Recall"
        page.keyboard.press("Enter")
        page.wait_for_selector("#recall-form")

        # -- narrow window: nothing overflows sideways ------------------------------------
        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(f"{url}/ui/#/memories")
        page.wait_for_selector("#memory-table")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        _shot(page, "memories-narrow")
        # Charts keep readable text on a phone: drawn at the screen's width, not shrunk.
        smallest = "sel => Math.min(...[...document.querySelectorAll(sel)].map(t => t.getBoundingClientRect().height))"
        page.goto(f"{url}/ui/#/learning")
        page.wait_for_selector("#timeline-svg")
        assert page.evaluate(smallest, "#timeline-svg text") >= 9
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        _shot(page, "learning-narrow")
        page.goto(f"{url}/ui/#/graph/{top}")
        page.wait_for_selector("#graph-svg g.node", state="attached")
        assert page.evaluate(smallest, "#graph-svg text") >= 9
        _shot(page, "graph-narrow")
        page.set_viewport_size({"width": 1280, "height": 800})

        # -- another workspace's key sees none of acme's data ------------------------------
        page.get_by_role("button", name="Log out").click()
        _login(page, url, served["key_b"])
        assert page.locator("#workspace-label").inner_text() == "workspace: globex"
        page.locator("#scope-tree").get_by_role("button", name="user bob").wait_for()
        content = page.content()
        for secret in ("alice", "Paris", "Berlin", "payments", "acme"):
            assert secret not in content, secret
        page.goto(f"{url}/ui/#/graph/{top}")
        expect(page.locator("#status")).to_have_text(re.compile(r"^404 "))
        assert page.locator("#graph-svg").count() == 0
        page.goto(f"{url}/ui/#/tensions")
        page.get_by_text("No tensions in this scope.").wait_for()
        page.goto(f"{url}/ui/#/learning")
        page.get_by_text("No feedback in this scope yet.").wait_for()
        assert "alice" not in page.content()
        _shot(page, "other-workspace")

        assert errors == []
        assert refused == [], refused
        context.close()
