"""docs/interfaces.md names every CLI command, MCP tool and REST path the code serves."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import click

from engrammar import Config, HashEmbedder, Memory
from engrammar.cli import cli
from engrammar.interfaces.rest import rest_operations
from engrammar.server import Principal, build_mcp_server

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "interfaces.md").read_text()
README = (ROOT / "README.md").read_text()


def test_every_cli_command_is_in_the_tour() -> None:
    assert isinstance(cli, click.Group)
    for name, command in cli.commands.items():
        if isinstance(command, click.Group):
            for sub in command.commands:
                assert f"engrammar {name} {sub}" in DOC, f"engrammar {name} {sub}"
        else:
            assert re.search(rf"engrammar {name}\b", DOC), f"engrammar {name}"


def test_every_command_but_the_servers_takes_json_as_the_tour_says() -> None:
    assert isinstance(cli, click.Group)
    without = set()
    for name, command in cli.commands.items():
        subs = command.commands if isinstance(command, click.Group) else {"": command}
        for sub, leaf in subs.items():
            options = {o for p in leaf.params for o in getattr(p, "opts", ())}
            if "--json" not in options:
                without.add(f"{name} {sub}".strip())
    assert without == {"serve", "mcp"}
    assert "every one but the two servers (`serve`, `mcp`) has `--json`" in DOC


def test_every_mcp_tool_and_rest_path_is_documented(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as memory:
        server = build_mcp_server(memory, Principal("default", fixed=False))
        tools = anyio.run(server.list_tools)
    for tool in tools:
        assert f"`{tool.name}`" in DOC, tool.name
    # The README's list of tools (the paragraph after its MCP configuration) names every one.
    listed = README[README.index("Tools: `memory_add`") :].split("\n\n")[0]
    assert set(re.findall(r"`(memory_\w+)`", listed)) == {tool.name for tool in tools}
    for path, method in rest_operations():
        if path in ("/openapi.json", "/healthz"):
            assert path in DOC
            continue
        pattern = re.escape(f"{method.upper()} {path}").replace(r"\{", "{").replace(r"\}", "}")
        assert re.search(pattern, DOC), f"{method.upper()} {path}"
