from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engrammar import AuthError, Memory, NotFoundError, ValidationError
from engrammar.keys import create_api_key, list_api_keys, revoke_api_key, verify_api_key


def test_key_is_shown_once_and_only_its_hash_is_stored(mem: Memory, store_path: Path) -> None:
    token, record = create_api_key(mem.store, "acme", user_id="alice", name="ci")
    assert token.startswith(f"egr_{record.key_id}_")
    with sqlite3.connect(store_path / "engrammar.db") as conn:
        rows = conn.execute("SELECT * FROM api_keys").fetchall()
        dump = "\n".join(conn.iterdump())
    assert len(rows) == 1
    # The secret is what follows the key id (it may itself hold "_": URL-safe base64).
    secret = token[len(f"egr_{record.key_id}_") :]
    assert len(secret) >= 20
    assert token not in dump and secret not in dump
    verified = verify_api_key(mem.store, token)
    assert (verified.workspace, verified.user_id, verified.name) == ("acme", "alice", "ci")


def test_wrong_unknown_and_malformed_keys_are_refused(mem: Memory) -> None:
    token, _ = create_api_key(mem.store, "acme")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    for bad in (forged, f"egr_{'0' * 12}_whatever", "not-a-key", "egr_", ""):
        with pytest.raises(AuthError, match="invalid API key"):
            verify_api_key(mem.store, bad)


def test_revoked_key_stops_working_and_listing_shows_it(mem: Memory) -> None:
    token, record = create_api_key(mem.store, "acme")
    other, _ = create_api_key(mem.store, "beta")
    assert revoke_api_key(mem.store, record.key_id) is True
    assert revoke_api_key(mem.store, record.key_id) is False
    with pytest.raises(AuthError, match="revoked"):
        verify_api_key(mem.store, token)
    verify_api_key(mem.store, other)
    listed = list_api_keys(mem.store, "acme")
    assert [k.key_id for k in listed] == [record.key_id] and listed[0].revoked_at is not None
    assert {k.workspace for k in list_api_keys(mem.store)} == {"acme", "beta"}
    assert "key_hash" not in listed[0].to_dict()
    with pytest.raises(NotFoundError):
        revoke_api_key(mem.store, "nope")


def test_key_creation_validates_its_scope(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="workspace"):
        create_api_key(mem.store, "  ")
    with pytest.raises(ValidationError, match="user_id"):
        create_api_key(mem.store, "acme", user_id="x" * 300)
    # <org>/<x>/<y> is where MemWire's routes take the key of <org>: no other key may own it.
    with pytest.raises(ValidationError, match="must not contain '/'") as info:
        create_api_key(mem.store, "acme/team_1/app_a")
    assert info.value.field == "workspace"
    assert list_api_keys(mem.store) == []
