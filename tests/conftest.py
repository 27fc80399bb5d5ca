"""Shared fixtures: one real embedding model per test session, and indexes in temporary BRAIN_HOMEs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain.config import PROJECT_ROOT, CorpusSpec, Settings  # noqa: E402

SHIPPED = PROJECT_ROOT / "docs_corpus"


@pytest.fixture(scope="session")
def embedder():
    from brain.embed import Embedder
    e = Embedder(Settings().model, "cpu")
    e.encode(["warm-up"])
    return e


@pytest.fixture
def make_brain(tmp_path, embedder):
    """Build a Brain on a fresh index folder (several per test allowed: same home -> same index)."""
    from brain.service import Brain

    def make(home: Path | None = None):
        return Brain(Settings(home=home or tmp_path / "home"), embedder=embedder)
    return make


@pytest.fixture(scope="session")
def shipped_brain(tmp_path_factory, embedder):
    """The shipped worklogs and kernels, ingested once for the whole session."""
    from brain.config import default_corpora
    from brain.service import Brain
    brain = Brain(Settings(home=tmp_path_factory.mktemp("shipped")), embedder=embedder)
    brain.ingest(default_corpora())
    return brain


def corpus(root: Path, name: str = "t") -> CorpusSpec:
    return CorpusSpec(name, root)
