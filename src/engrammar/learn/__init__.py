"""Learning from feedback: pure functions, no I/O (the store supplies facts, Memory applies)."""
