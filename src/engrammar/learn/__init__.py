"""Learning from feedback: pure functions (no I/O) that turn signals into bounded score changes."""
