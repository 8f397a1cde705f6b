"""Record ids that sort in the order they were made.

An id is 32 hex digits, like a UUID's: the microseconds since 1970 (14 digits), then 72 random
bits. Ids made by one process only grow, even within one microsecond, so sorting ids sorts
records by creation. Ranking breaks ties between equal scores by id; with these ids the same
messages added in the same order rank the same way in every store they are added to, and the
older of two equal memories comes first.
"""

from __future__ import annotations

import secrets
import threading
import time

__all__ = ["new_id"]

_lock = threading.Lock()
_last = 0


def new_id() -> str:
    """A fresh id, greater than every id this process made before."""
    global _last
    with _lock:
        stamp = max(time.time_ns() // 1000, _last + 1)
        _last = stamp
    return f"{stamp:014x}{secrets.token_hex(9)}"
