"""The walk of `Memory.recall`'s query through the package: which modules handle it, in order,
and how often it climbs back up a layer.

A step is a call of a function of engrammar that receives the query, as the string itself or
as an object holding it (the parsed query, a recall record); consecutive calls in one module
are one step. A generator (a context manager's body) is called when it is first entered; its
later resumptions are not calls. A climb is a step into a module of a higher layer than the step before it (the
layers of ARCHITECTURE.md, `[tool.importlinter]` in pyproject.toml): the query went down and
came back up. One recall on an embedded store of a few memories, one of them longer than
``excerpt_chars`` (so that the excerpt stage runs too), after one warm-up recall.

    python bench/recall_walk.py [--hash]

`--hash` uses the deterministic test embedder instead of the default model (the walk is the
same apart from the embedder's own module). Writes bench/results/recall_walk.md.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

from engrammar import Config, Memory
from engrammar.embed import HashEmbedder

# Highest first, as in pyproject.toml's `layers` contract.
LAYERS = (
    ("interfaces", "server", "cli", "__main__", "demo", "feedback"),
    ("compat", "keys"),
    ("aio",),
    ("memory",),
    ("engine",),
    ("store", "embed"),
    ("recall", "learn"),
    ("models", "config"),
    ("config_checks",),
    ("deadline",),
    ("errors",),
)
QUERY = "where did I move after Berlin last spring?"
# An answer longer than ``excerpt_chars`` (1,000), the move it speaks of past its first window.
_LONG_ANSWER = (
    "Moving countries is a lot of work, so here is a checklist. "
    + "Sort out the paperwork first: registration, a tax number, a bank account. " * 12
    + "Since you moved from Berlin to Lisbon last spring, your German deregistration is done."
)
_GENERATOR = 0x20  # inspect.CO_GENERATOR


def layer(module: str) -> int:
    """The height of ``module``'s layer (higher is nearer the interfaces)."""
    top = module.split(".")[1] if "." in module else module
    for i, names in enumerate(LAYERS):
        if top in names:
            return len(LAYERS) - i
    return -1


def carries(value: Any) -> bool:
    """Whether ``value`` is the query or an object one of whose fields is."""
    if isinstance(value, str):
        return value == QUERY
    fields = getattr(value, "__dict__", None)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        fields = value._asdict()
    elif fields is None and hasattr(type(value), "__slots__"):
        fields = {s: getattr(value, s, None) for s in type(value).__slots__}
    return isinstance(fields, dict) and any(
        v == QUERY for v in fields.values() if isinstance(v, str)
    )


def walk(memory: Memory) -> list[tuple[str, str]]:
    """The steps of one recall of :data:`QUERY`: (module, function)."""
    steps: list[tuple[str, str]] = []
    generators: list[FrameType] = []  # the frames of the generators already entered (kept alive)

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code
        if not module.startswith("engrammar"):
            return
        if code.co_flags & _GENERATOR:  # a generator counts where it is first entered
            if any(f is frame for f in generators):
                return  # resumed, not called
            generators.append(frame)
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(carries(frame.f_locals.get(n)) for n in names) and (
            not steps or steps[-1][0] != module
        ):
            name = code.co_name
            if name == "__init__" and "self" in frame.f_locals:  # a record built from it
                name = type(frame.f_locals["self"]).__name__ + "()"
            steps.append((module, name))

    sys.setprofile(profile)
    try:
        memory.recall(QUERY, user_id="u")
    finally:
        sys.setprofile(None)
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hash", action="store_true", help="the test embedder, not the model")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results/recall_walk.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        embedder = HashEmbedder() if args.hash else None
        memory = Memory(Config(path=folder), embedder=embedder)
        memory.add(
            [
                {"role": "user", "content": "I lived in Berlin until March."},
                {"role": "user", "content": "Last spring I moved to Lisbon for work."},
                {"role": "assistant", "content": "Lisbon is lovely in spring."},
                {"role": "assistant", "content": _LONG_ANSWER},
            ],
            user_id="u",
        )
        memory.recall("warm up", user_id="u")
        steps = walk(memory)
        memory.close()
    modules = list(dict.fromkeys(m for m, _ in steps))
    climbs = [(a, b) for (a, _), (b, _) in itertools.pairwise(steps) if layer(b) > layer(a)]
    command = "python bench/recall_walk.py" + (" --hash" if args.hash else "")
    lines = [
        "# The walk of a recall's query",
        "",
        f"Command: `{command}` · machine: {platform.machine()}, Python "
        f"{platform.python_version()} · date: {time.strftime('%Y-%m-%d')}.",
        "",
        f"**{len(modules)} modules, {len(steps)} steps, {len(climbs)} climbs** back up a layer "
        "(how each is counted: the docstring of `bench/recall_walk.py`).",
        "",
        "| step | module | function | climbs |",
        "|---|---|---|---|",
    ]
    for i, (module, function) in enumerate(steps, 1):
        up = i > 1 and layer(module) > layer(steps[i - 2][0])
        lines.append(f"| {i} | `{module}` | `{function}` | {'yes' if up else ''} |")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(modules)} modules, {len(steps)} steps, {len(climbs)} climbs -> {args.out}")


if __name__ == "__main__":
    main()
