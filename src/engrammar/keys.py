"""API keys for the HTTP server: each key is bound to one workspace (and optionally one user).

A key looks like ``egr_<key_id>_<secret>``. The store keeps only the SHA-256 hash of the whole
key, so a leaked database does not leak usable keys; the plaintext is shown once, at creation.
A fast hash is enough here because the secret is 256 random bits, not a password.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from .engine import validate as v
from .errors import AuthError, ValidationError
from .store import ApiKeyRecord, ApiKeyStore

__all__ = ["create_api_key", "list_api_keys", "revoke_api_key", "verify_api_key"]

_PREFIX = "egr_"
_DUMMY_HASH = hashlib.sha256(b"engrammar: no such key").hexdigest()


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_api_key(
    store: ApiKeyStore, workspace: str, *, user_id: str | None = None, name: str = ""
) -> tuple[str, ApiKeyRecord]:
    """Create a key for ``workspace`` (and ``user_id`` when given).

    Returns:
        ``(key, record)``: the plaintext key, which is not stored and cannot be shown again,
        and the stored record (``record.key_id`` names the key in ``list`` and ``revoke``).

    Raises:
        ValidationError: a bad workspace, user_id or name.
    """
    ws = v.scope_id("workspace", workspace, required=True)
    assert ws is not None
    if "/" in ws:
        # MemWire's routes reach <org>/<workspace_id>/<app_id> with the key of <org>: a key
        # of its own for such a name would share that workspace with another key.
        raise ValidationError(
            "workspace",
            f"must not contain '/' (got {ws!r}): names with '/' are the workspaces MemWire's "
            "routes make below an organisation's key (<org>/<workspace_id>/<app_id>)",
        )
    user = v.scope_id("user_id", user_id)
    label = v.text("name", name, 200) if name else ""
    key_id = secrets.token_hex(6)
    token = f"{_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    record = ApiKeyRecord(
        key_id=key_id,
        key_hash=_hash(token),
        workspace=ws,
        user_id=user,
        name=label,
        created_at=time.time(),
    )
    store.create_api_key(record)
    return token, record


def verify_api_key(store: ApiKeyStore, token: str) -> ApiKeyRecord:
    """The active key record that ``token`` proves, or ``AuthError``.

    The hash comparison is constant-time, and an unknown key id costs the same comparison,
    so timing tells an attacker nothing about which part of a guess was right.
    """
    key_id = ""
    if token.startswith(_PREFIX):
        key_id = token[len(_PREFIX) :].split("_", 1)[0]
    record = store.get_api_key(key_id) if key_id else None
    expected = record.key_hash if record is not None else _DUMMY_HASH
    matches = hmac.compare_digest(expected.encode(), _hash(token).encode())
    if record is None or not matches:
        raise AuthError("invalid API key")
    if record.revoked_at is not None:
        raise AuthError("this API key was revoked")
    return record


def list_api_keys(store: ApiKeyStore, workspace: str | None = None) -> list[ApiKeyRecord]:
    """Key records (never the keys) of a workspace, or of every workspace."""
    return store.list_api_keys(v.scope_id("workspace", workspace))


def revoke_api_key(store: ApiKeyStore, key_id: str) -> bool:
    """Revoke a key by its id; ``True`` if it was active until now."""
    kid = v.scope_id("key_id", key_id, required=True)
    assert kid is not None
    return store.revoke_api_key(kid)
