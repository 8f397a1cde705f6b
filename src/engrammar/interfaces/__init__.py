"""The interfaces: CLI, MCP and REST, generated from one operation table (:mod:`.operations`).

Each module here is imported on demand, so the CLI does not load the servers' dependencies.
"""
