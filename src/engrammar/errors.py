"""Errors raised by engrammar.

Every error the library raises on purpose derives from :class:`EngrammarError`::

    EngrammarError
    ├── ValidationError      bad input; names the field (``.field``) and the problem
    │   └── TooLargeError    input over a configured size limit; names the setting
    ├── NotFoundError        a memory, recall or record that does not exist in this scope
    ├── ConflictError        an idempotency key reused with a different payload
    ├── AuthError            a missing, unknown or revoked API key
    │   └── ForbiddenError   a valid key asking for a workspace or user it does not own
    ├── StoreError           the storage backend failed (I/O, corruption, lock timeout)
    ├── DeadlineError        the call passed its deadline (a server's request_deadline_s)
    │                        before writing anything; try again later
    ├── EmbedderError        the embedding model is missing, broken or mismatched with the store
    └── MissingExtraError    a feature whose optional dependencies are not installed; names the
                             extra to install (``pip install 'engrammar[server]'``)

A raised error never leaves a half-written change behind: every write is one transaction.
Its message can always be encoded: anything UTF-8 cannot carry that it quotes (a lone
surrogate from a JSON key, say) is shown escaped (``\\ud800``).
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "ConflictError",
    "DeadlineError",
    "EmbedderError",
    "EngrammarError",
    "ForbiddenError",
    "MissingExtraError",
    "NotFoundError",
    "StoreError",
    "TooLargeError",
    "ValidationError",
]


def escaped(text: str) -> str:
    """``text`` with what UTF-8 cannot encode (lone surrogates) written as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class EngrammarError(Exception):
    """Base class of every error engrammar raises on purpose."""

    def __str__(self) -> str:
        return escaped(super().__str__())


class ValidationError(EngrammarError, ValueError):
    """Input that engrammar refuses. ``field`` names the offending argument or key."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = escaped(field)
        self.problem = escaped(problem)
        super().__init__(f"{self.field}: {self.problem}")


class TooLargeError(ValidationError):
    """Input that would pass a configured size limit (``Config.max_*``); the message names
    the setting. HTTP answers it with 413; nothing is written."""


class DeadlineError(EngrammarError, TimeoutError):
    """The call's work passed its deadline and was stopped before it wrote anything (HTTP
    503 with ``Retry-After``)."""


class NotFoundError(EngrammarError, LookupError):
    """The requested object does not exist (or is not visible in the caller's scope)."""


class ConflictError(EngrammarError):
    """An idempotency key was reused with a different payload."""


class AuthError(EngrammarError):
    """Authentication or authorisation failed."""


class ForbiddenError(AuthError):
    """A valid API key asked for a workspace or user that it is not bound to."""


class StoreError(EngrammarError):
    """The storage backend failed."""


class EmbedderError(EngrammarError):
    """The embedding model is missing, failed, or does not match the store."""


class MissingExtraError(EngrammarError, ImportError):
    """A feature needs an optional extra that is not installed; the message names the extra."""

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{extra}' extra ({missing} is not installed): "
            f"pip install 'engrammar[{extra}]'"
        )


def require_extra(feature: str, extra: str, *modules: str) -> None:
    """Import ``modules``, or raise :class:`MissingExtraError` naming ``extra``."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise MissingExtraError(feature, extra, name) from exc
