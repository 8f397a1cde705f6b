"""Learning from feedback: pure functions that turn signals into bounded score changes."""
