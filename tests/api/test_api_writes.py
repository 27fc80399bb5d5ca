"""Uploads and deletes over HTTP while searches run: no errors, no half-applied change seen by a reader, and
afterwards the index matches the uploaded files exactly. Runs on its own index (it changes data)."""
from __future__ import annotations

import random
import threading

import httpx
import pytest

from brain.chunking import chunk_text
from brain.config import Settings

CORPUS = "cw"
NAMES = [f"doc-{i}.md" for i in range(5)]
SECTIONS = ("alpha", "beta", "gamma")


def document(i: int, version: int) -> bytes:
    """Three sections, each carrying tokens unique to (document, section) and the document's version."""
    parts = [f"# Document {i}\n"]
    for s in SECTIONS:
        parts.append(f"## Section {s}\n\nzq{i}{s} appears only here. Version zv{i}x{version} of this note "
                     f"about tensor memory and TMA loads.\n")
    return "\n".join(parts).encode()


@pytest.fixture
def server(tmp_path, embedder, live_server_factory):
    from brain.service import Brain
    settings = Settings(home=tmp_path / "home", api_key="write-key")
    brain = Brain(settings, embedder=embedder)
    with live_server_factory(settings, brain) as s:
        yield s, brain


def test_concurrent_uploads_deletes_and_searches(server):
    live, brain = server
    key = {"X-API-Key": "write-key"}
    errors: list[str] = []
    halves: list[str] = []
    stop = threading.Event()
    versions = {n: 0 for n in NAMES}
    searches = [0]

    with httpx.Client(base_url=live.url, timeout=30) as c:
        for i, name in enumerate(NAMES[:2]):  # something to find from the start
            assert c.post("/documents", files={"file": (name, document(i, 0))}, data={"corpus": CORPUS},
                          headers=key).status_code == 201

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=live.url, timeout=30) as c:
            while not stop.is_set():
                i = rng.randrange(len(NAMES))
                q = " ".join(f"zq{i}{s}" for s in SECTIONS)
                try:
                    r = c.get("/search", params={"q": q, "k": 10, "mode": "bm25", "corpus": CORPUS})
                except httpx.HTTPError as e:
                    errors.append(f"search: {type(e).__name__}: {e}")
                    continue
                if r.status_code == 400 and "unknown corpus" in r.text:
                    continue  # every document of the corpus deleted at this instant
                if r.status_code != 200:
                    errors.append(f"search {r.status_code}: {r.text[:200]}")
                    continue
                searches[0] += 1
                hits = [h for h in r.json()["results"] if h["source"] == NAMES[i]]
                found = {s for s in SECTIONS for h in hits if f"zq{i}{s}" in h["text"]}
                seen_versions = {w for h in hits for w in h["text"].split() if w.startswith(f"zv{i}x")}
                # all three sections of one version, or nothing: never half of an upload or a delete
                if found not in (set(), set(SECTIONS)) or len(seen_versions) > 1:
                    halves.append(f"{NAMES[i]}: sections {sorted(found)}, versions {sorted(seen_versions)}")

    def writer(seed: int, ops: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=live.url, timeout=60) as c:
            for _ in range(ops):
                i = rng.randrange(len(NAMES))
                try:
                    if rng.random() < 0.6:
                        versions[NAMES[i]] += 1
                        r = c.post("/documents", files={"file": (NAMES[i], document(i, versions[NAMES[i]]))},
                                   data={"corpus": CORPUS}, headers=key)
                        ok = r.status_code == 201
                    else:
                        r = c.delete(f"/documents/{CORPUS}/{NAMES[i]}", headers=key)
                        ok = r.status_code in (200, 404)  # 404: the other writer deleted it first
                except httpx.HTTPError as e:
                    errors.append(f"write: {type(e).__name__}: {e}")
                    continue
                if not ok:
                    errors.append(f"{r.request.method} {r.status_code}: {r.text[:200]}")

    readers = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    writers = [threading.Thread(target=writer, args=(100 + n, 12)) for n in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(240)
    stop.set()
    for t in readers:
        t.join(60)

    assert not errors, errors[:5]
    assert not halves, halves[:5]
    assert searches[0] > 20, "the readers ran concurrently with the writes"

    # the index matches the files on disk exactly
    folder = brain.store.uploads_dir(CORPUS)
    on_disk = {p.name: p.read_text() for p in folder.iterdir() if p.suffix == ".md"}
    with httpx.Client(base_url=live.url) as c:
        listed = {s["source"] for s in c.get("/sources").json() if s["corpus"] == CORPUS}
    assert listed == set(on_disk)
    stored = {}
    for row in brain.chunks(corpus=CORPUS):
        stored.setdefault(row["source"], []).append(row["text"])
    for name, text in on_disk.items():
        expected = [ch.text for ch in chunk_text(text, name, ".md")]
        assert sorted(stored.get(name, [])) == sorted(expected), name
    assert set(stored) == set(on_disk)
    manifest = brain.store.load_manifest()
    assert brain.store.stored_ids() == manifest.ids()  # nothing orphaned in Chroma, nothing missing
    assert set(brain.searcher.snapshot().ids) == manifest.ids()


def test_upload_then_search_then_delete(server):
    live, brain = server
    key = {"X-API-Key": "write-key"}
    with httpx.Client(base_url=live.url, timeout=30) as c:
        for bad in ("../sneaky.md", "../../evil.md", "/etc/cron.d/x.md", "a/b.md", "a\\b.md", ".."):
            r = c.post("/documents", files={"file": (bad, document(7, 1))}, headers=key)
            assert r.status_code == 400 and "plain name" in r.json()["error"], bad  # refused, never renamed
        r = c.post("/documents", files={"file": ("sneaky.md", document(7, 1))}, headers=key)
        assert r.status_code == 201 and r.json()["path"] == "uploads/sneaky.md"
        assert (brain.store.uploads_dir("uploads") / "sneaky.md").exists()
        hits = c.get("/search", params={"q": "zq7alpha", "mode": "bm25"}).json()["results"]
        assert hits and hits[0]["source"] == "sneaky.md" and hits[0]["corpus"] == "uploads"
        assert c.get("/sources/uploads/sneaky.md").json()["text"].startswith("# Document 7")
        assert c.delete("/documents/uploads/sneaky.md", headers=key).status_code == 200
        assert not (brain.store.uploads_dir("uploads") / "sneaky.md").exists()
        assert c.get("/search", params={"q": "zq7alpha", "mode": "bm25"}).json()["results"] == []
        assert c.get("/sources/uploads/sneaky.md").status_code == 404


def test_a_symlink_out_of_a_corpus_is_not_served(tmp_path, embedder, live_server_factory):
    from brain.config import CorpusSpec
    from brain.service import Brain
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nzqsecret token that must not leak\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ok.md").write_text("# Fine\n\nordinary note about TMA\n")
    (corpus / "leak.md").symlink_to(secret)
    settings = Settings(home=tmp_path / "home")
    brain = Brain(settings, embedder=embedder)
    summary = brain.ingest([CorpusSpec("linked", corpus)])
    assert any("leak.md" in s and "outside the corpus" in s for s in summary.skipped)  # never indexed
    with live_server_factory(settings, brain) as live, httpx.Client(base_url=live.url) as c:
        assert c.get("/sources/linked/ok.md").status_code == 200
        r = c.get("/sources/linked/leak.md")
        assert r.status_code == 404 and "zqsecret" not in r.text
        # words of both files: the index answers, from ok.md only (a query with no match anywhere gets none)
        hits = c.get("/search", params={"q": "zqsecret token ordinary note"}).json()["results"]
        assert hits and not any("zqsecret" in h["text"] for h in hits)
