"""The package's public names: ``from engrammar import *`` and the modules kept as aliases."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import engrammar
import engrammar.compat.openclaw as openclaw
import engrammar.feedback as feedback_alias


def test_star_import_gives_every_name_of_all() -> None:
    namespace: dict[str, object] = {}
    exec("from engrammar import *", namespace)
    missing = [name for name in engrammar.__all__ if name not in namespace]
    assert missing == []
    assert namespace["FeedbackEvent"] is engrammar.models.FeedbackEvent
    assert namespace["Memory"] is engrammar.Memory


def test_every_name_of_all_resolves_to_a_public_object() -> None:
    assert len(set(engrammar.__all__)) == len(engrammar.__all__)
    for name in engrammar.__all__:
        value = getattr(engrammar, name)
        if name != "__version__":
            assert inspect.isclass(value), name
            assert value.__module__.startswith("engrammar."), name


def test_the_feedback_records_are_exported() -> None:
    for name in ("DecisionReview", "FeedbackEvent", "LoggedEvent", "MemoryRating",
                 "PreferencePair"):  # fmt: skip
        assert getattr(engrammar, name) is getattr(engrammar.models, name)


def test_engrammar_feedback_is_an_alias_of_compat_openclaw() -> None:
    for name in feedback_alias.__all__:
        assert getattr(feedback_alias, name) is getattr(openclaw, name), name
    assert set(openclaw.__all__) <= set(feedback_alias.__all__)


def test_no_underscore_module_beside_the_public_ones() -> None:
    root = [m.name for m in pkgutil.iter_modules(engrammar.__path__)]
    engine = [
        m.name for m in pkgutil.iter_modules(importlib.import_module("engrammar.engine").__path__)
    ]
    assert {"ingest", "ranking", "feedback", "records", "transfer"} <= set(engine)
    # ``__main__`` is Python's entry point for ``python -m engrammar``, not a private module.
    assert [n for n in root if n.startswith("_") and n != "__main__"] == []
