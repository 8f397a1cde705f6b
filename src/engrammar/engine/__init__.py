"""The engine: what :class:`~engrammar.Memory`'s operations do, one module per flow.

==============  =====================================================================
module          flow
==============  =====================================================================
``ingest``      add and update: embed, deduplicate, link into the graph (edges,
                contradictions found at add time), store in one transaction
``candidates``  one search: keyword and vector hits, fused, refined
``recall``      search, recall and explain: candidates, graph walk, learned ranking,
                tensions, all from one ranking pass
``feedback``    a reply to a recall: path alignment, tension sides, reply signals
``records``     feedback events, decision reviews, preference pairs, logged events,
                memory ratings
``transfer``    export and import as JSON Lines
``validate``    the input checks every entry point shares
``transcript``  messages as chat SDKs write them (OpenAI, Anthropic) read into text
==============  =====================================================================

Each flow is a set of functions over an :class:`Engine` (a store, an embedder and the
settings); none of them knows ``Memory``. Decisions are pure functions of ``recall/`` and
``learn/``; reads and writes go through the :class:`~engrammar.store.Store` protocol.
"""

from __future__ import annotations

from .base import Engine

__all__ = ["Engine"]
