"""Team mode (a real `chroma run` on loopback) against the hostile run's findings: an index named like another's
side collection, and records written through two hosts that serve one index."""
import time

import pytest

from brain import MAX_K, BrainError
from brain.config import Settings
from brain.service import Brain
from tests.conftest import corpus
from tests.test_chroma_server import chroma_server, docs  # noqa: F401  (the module's server fixture)


def test_an_index_named_like_a_side_collection_touches_nothing(tmp_path, chroma_server, embedder):  # noqa: F811
    victim = Brain(Settings(home=tmp_path / "v", chroma_url=chroma_server, index="victim"), embedder=embedder)
    victim.ingest([corpus(docs(tmp_path / "a", 2, "a"), "a")])
    chunks = victim.stats()["chunks"]
    for name in ("victim-meta", "victim-uploads", "victim-records", "victim-lease-1"):
        with pytest.raises(BrainError, match="side collection"):
            Brain(Settings(home=tmp_path / "x", chroma_url=chroma_server, index=name), embedder=embedder)
    fresh = Brain(Settings(home=tmp_path / "v2", chroma_url=chroma_server, index="victim"), embedder=embedder)
    assert fresh.stats()["chunks"] == chunks > 0


def test_records_write_through_every_host_serving_the_index(tmp_path, chroma_server, embedder):  # noqa: F811
    """Before: the records corpus was one host's folder; the second host answered 400 for 4 of 9 records."""
    hosts = [Brain(Settings(home=tmp_path / f"h{n}", chroma_url=chroma_server, index="team-rec"), embedder=embedder)
             for n in range(2)]
    outs = [hosts[n % 2].record({"title": f"attempt {n}", "verdict": "neutral", "problem": "gemm"}) for n in range(6)]
    outs.append(hosts[1].record({"title": "appended", "verdict": "improved"}, "shared.md"))
    outs.append(hosts[0].record({"title": "appended again", "verdict": "failed"}, "shared.md"))
    for host in hosts:  # a write through one host shows through the other within 5 s (generation polls)
        deadline = time.monotonic() + 5
        while not {o["id"] for o in outs} <= {r["id"] for r in host.find_attempts(include_superseded=True,
                                                                                 k=MAX_K)["results"]}:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    text = hosts[0].read_source("records/shared.md")["text"]
    assert "## appended\n" in text and "## appended again" in text
    hosts[1].rebuild()  # records live in the server and outlast a rebuild
    fresh = Brain(Settings(home=tmp_path / "h3", chroma_url=chroma_server, index="team-rec"), embedder=embedder)
    assert {o["id"] for o in outs} <= {r["id"] for r in fresh.find_attempts(include_superseded=True, k=MAX_K)["results"]}
