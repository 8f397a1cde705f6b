"""Request size limits and per-key rate limiting of `engrammar serve`, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.interfaces.limits import TokenBucket
from engrammar.keys import create_api_key
from serving import serve_in_thread

pytestmark = pytest.mark.processes


@pytest.fixture
def limited(tmp_path: object) -> Iterator[tuple[str, Memory, str, str]]:
    config = Config(
        path=f"{tmp_path}/store",
        max_request_bytes=2_000,
        # A token every 100 s: no request of a test gets one back, however slowly the
        # machine runs it (the refill itself: test_token_bucket_refills_at_its_rate).
        rate_limit_per_s=0.01,
        rate_limit_burst=5,
    )
    memory = Memory(config, embedder=HashEmbedder())
    key_a = create_api_key(memory.store, "team-a")[0]
    key_b = create_api_key(memory.store, "team-b")[0]
    for base in serve_in_thread(memory):
        yield base, memory, key_a, key_b
    memory.close()


def test_large_bodies_get_413_and_store_nothing(limited: tuple[str, Memory, str, str]) -> None:
    base, memory, key, _ = limited
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
        r = c.post("/v1/memories", json={"content": "x" * 5_000, "user_id": "u"})
        assert r.status_code == 413
        assert r.json()["error"]["type"] == "payload_too_large"
        assert "2000" in r.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: the streamed body is counted
            yield b'{"content": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'", "user_id": "u"}'

        r = c.post("/v1/memories", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        assert "max_request_bytes" in r.json()["error"]["message"]
        # The streamed body's 413 has the same type as the declared one.
        assert r.json()["error"]["type"] == "payload_too_large"
        assert c.post("/v1/memories", json={"content": "small", "user_id": "u"}).status_code == 201
    assert memory.stats(workspace="team-a")["memories"] == 1


def test_rate_limit_per_key_gives_429(limited: tuple[str, Memory, str, str]) -> None:
    base, _, key_a, key_b = limited
    with (
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key_a}"}, timeout=60) as a,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key_b}"}, timeout=60) as b,
    ):
        codes = [a.get("/v1/stats").status_code for _ in range(8)]
        assert codes[:5] == [200] * 5 and 429 in codes[5:]
        r = a.get("/v1/stats")
        assert r.status_code == 429
        assert r.json()["error"]["type"] == "rate_limited"
        assert 1 <= int(r.headers["Retry-After"]) <= 100  # the next token, at 0.01 a second
        assert b.get("/v1/stats").status_code == 200  # another key has its own budget
        assert a.get("/healthz").status_code == 200  # health checks are never limited


def test_token_bucket_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=10, burst=2)
    assert bucket.take("k", 0.0) == 0 and bucket.take("k", 0.0) == 0
    assert bucket.take("k", 0.0) == pytest.approx(0.1)
    assert bucket.take("k", 0.1) == 0
    assert bucket.take("other", 0.1) == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max_request_bytes", 0),
        ("rate_limit_per_s", -1.0),
        ("rate_limit_burst", 0),
        ("body_deadline_s", 0.0),
    ],
)
def test_limit_settings_are_validated(name: str, value: float) -> None:
    with pytest.raises(ValidationError) as info:
        Config(**{name: value})
    assert info.value.field == name


def test_failed_keys_from_an_address_do_not_hold_back_valid_keys_from_it(
    limited: tuple[str, Memory, str, str],
) -> None:
    base, _, key_a, key_b = limited
    with httpx.Client(base_url=base, timeout=30) as c:
        invented = [
            c.get("/v1/stats", headers={"Authorization": f"Bearer egr_{i:012x}_guess"})
            for i in range(7)
        ]
        # Each failed attempt spends the address's tokens: 401 while it has some, then 429.
        assert [r.status_code for r in invented] == [401] * 5 + [429] * 2
        assert c.get("/v1/stats").status_code == 429  # no key at all: the same address bucket
        # A verified key from the same address is judged by its own bucket only.
        for key in (key_a, key_b):
            assert c.get("/v1/stats", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_memwire_routes_have_the_same_limits(tmp_path: object) -> None:
    config = Config(
        path=f"{tmp_path}/store",
        rate_limit_per_s=0.01,
        rate_limit_burst=5,
        feedback_rate_limit_per_s=0.01,
        feedback_rate_limit_burst=3,
    )
    memory = Memory(config, embedder=HashEmbedder())
    key = create_api_key(memory.store, "acme")[0]
    other = create_api_key(memory.store, "acme")[0]
    tenant = {"user_id": "u"}
    for base in serve_in_thread(memory, memwire_compat=True):
        with httpx.Client(base_url=base, timeout=30) as c:
            x = {"X-API-Key": key}
            searches = [
                c.post("/v1/memories/search", headers=x, json={**tenant, "query": "tea"})
                for _ in range(7)
            ]
            assert [r.status_code for r in searches] == [200] * 5 + [429] * 2
            assert set(searches[-1].json()) == {"detail"}  # MemWire's error shape
            assert 1 <= int(searches[-1].headers["Retry-After"]) <= 100
            # Bearer reaches the same key's bucket; another key has its own.
            assert c.post("/v1/stats", headers={"Authorization": f"Bearer {key}"},
                          json=tenant).status_code == 429  # fmt: skip
            o = {"X-API-Key": other}
            assert c.post("/v1/stats", headers=o, json=tenant).status_code == 200
            invented = [
                c.post("/v1/stats", headers={"X-API-Key": f"egr_{i:012x}_guess"}, json=tenant)
                for i in range(6)
            ]
            assert [r.status_code for r in invented] == [401] * 5 + [429]
            assert c.get("/health").status_code == 200  # health is never limited
            # Feedback writes have the per-source budget of /v1 and /mcp as well.
            reply = {**tenant, "assistant_response": "Tea it is."}
            fed = [c.post("/v1/memories/feedback", headers=o, json=reply) for _ in range(4)]
            assert [r.status_code for r in fed] == [200] * 3 + [429]
            assert "feedback" in fed[-1].json()["detail"]
    memory.close()
