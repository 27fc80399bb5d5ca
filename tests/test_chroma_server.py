"""Team mode against a real `chroma run` on loopback (one server for the module): named indexes that never
touch each other, homes that share nothing but the server serving one index, the write lease across
processes (races, a writer killed mid-ingest), and indexes built by another model or chunker refused."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import httpx
import pytest

from brain import BrainError, Unavailable
from brain.chunking import CHUNKER_VERSION, chunk_text
from brain.config import PROJECT_ROOT, CorpusSpec, Settings
from brain.service import Brain
from brain.store import open_store
from brain.store.lease import ServerLease
from tests.conftest import corpus

CHROMA = Path(sys.executable).with_name("chroma")
PORTS = range(18300, 18400)  # this suite's loopback range


def _ports(n: int = 1) -> list[int]:
    held, out = [], []
    for port in PORTS:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        held.append(s)
        out.append(port)
        if len(out) == n:
            break
    for s in held:
        s.close()
    if len(out) < n:
        pytest.skip("no free port in 18300-18399")
    return out


def _heartbeat(url: str, proc, wait: float = 60) -> bool:
    """Whether this chroma process answers its heartbeat (another server on the port answers 404)."""
    deadline = time.time() + wait
    while time.time() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1)
            return True
        except urllib.error.HTTPError:
            return False
        except OSError:
            time.sleep(0.3)
    return False


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    exe = str(CHROMA) if CHROMA.exists() else shutil.which("chroma")
    if not exe:
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")
    path = tmp_path_factory.mktemp("chroma-server")
    for _ in range(3):  # a port found free may be taken before chroma binds it (suites running side by side)
        (port,) = _ports()
        proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        if _heartbeat(url, proc):
            break
        proc.kill()
        proc.wait(10)
    else:
        pytest.fail("chroma server did not come up")
    yield url
    proc.terminate()
    proc.wait(10)


def docs(root: Path, n: int, tag: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"{tag}{i}.md").write_text(f"# Note {tag} {i}\n\n## Rule\nzq{tag}{i} tokens live only here, "
                                           f"about TMA loads and tensor memory.\n\n## Why\nbecause {tag} {i}.\n")
    return root


def env(url: str, home: Path, index: str, **extra) -> dict:
    return {**os.environ, "BRAIN_CHROMA_URL": url, "BRAIN_HOME": str(home), "BRAIN_INDEX": index,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(PROJECT_ROOT),
            **{k: str(v) for k, v in extra.items()}}


def consistent(brain: Brain) -> dict[str, list[str]]:
    """Assert the index equals its files: Chroma holds exactly the manifest's chunks, and each file's chunks
    are what the chunker makes of its stored text. Returns {corpus/source: chunk texts}."""
    m = brain.store.load_manifest()
    assert brain.store.stored_ids() == m.ids()
    out: dict[str, list[str]] = {}
    for row in brain.chunks():
        out.setdefault(f"{row['corpus']}/{row['source']}", []).append(row["text"])
    for key, entry in m.files.items():
        corpus_name, source = key.split(":", 1)
        if m.corpora[corpus_name].get("uploads"):
            text = brain.store.read_upload(corpus_name, source)
            assert sorted(out[f"{corpus_name}/{source}"]) == sorted(c.text for c in chunk_text(text, source, ".md"))
    return out


def test_ingest_and_search_through_a_chroma_server(tmp_path, chroma_server, embedder):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text(
        "# Rules\n\n## Scoping\nVariables defined inside `if` blocks cannot be used "
        "in other `if` blocks: NameError.\n\n## TMA\nTMA loads are issued by one warp.\n")
    writer = Brain(Settings(home=tmp_path / "w", chroma_url=chroma_server, index="plain"), embedder=embedder)
    assert writer.ingest([corpus(tmp_path / "docs")]).chunks_added == 2
    hit = writer.search("NameError in an if block", k=1)["results"][0]
    assert hit["section"] == "Rules › Scoping" and (hit["start_line"], hit["end_line"]) == (1, 4)
    # nothing of the index is on the writer's disk but caches: the manifest lives in the server
    assert not (tmp_path / "w" / "manifest.json").exists()


def test_two_homes_on_one_server_never_touch_each_other(tmp_path, chroma_server, embedder):
    """The issue's data loss: a second home's ingest deleted the first's chunks as orphans."""
    h1 = Brain(Settings(home=tmp_path / "h1", chroma_url=chroma_server), embedder=embedder)
    h2 = Brain(Settings(home=tmp_path / "h2", chroma_url=chroma_server), embedder=embedder)
    assert h1.settings.index != h2.settings.index  # derived from the home
    h1.ingest([corpus(docs(tmp_path / "a", 3, "a"), "a")])
    before = h1.stats()["chunks"]
    h2.ingest([corpus(docs(tmp_path / "b", 2, "b"), "x")])
    h2.ingester.remove_corpus("x")  # and a removal, which deletes
    fresh = Brain(Settings(home=tmp_path / "h1", chroma_url=chroma_server), embedder=embedder)
    assert fresh.stats()["chunks"] == before > 0
    assert fresh.search("zqa1", k=1, mode="bm25")["results"][0]["source"] == "a1.md"
    # the stats an anonymous reader gets name the index, never a path
    assert "location" not in fresh.stats() and all("root" not in c for c in fresh.stats()["corpora"].values())


def test_homes_sharing_only_the_server_serve_one_index(tmp_path, chroma_server, embedder):
    """Two processes' worth of Brains with different, empty homes and the same BRAIN_INDEX: a write through one
    is visible through the other within 5 s, uploads included (their text lives in the server too)."""
    a = Brain(Settings(home=tmp_path / "ha", chroma_url=chroma_server, index="team-a"), embedder=embedder)
    b = Brain(Settings(home=tmp_path / "hb", chroma_url=chroma_server, index="team-a"), embedder=embedder)
    a.ingest([corpus(docs(tmp_path / "d", 2, "d"), "d")])
    assert b.search("zqd1", k=1, mode="bm25")["results"][0]["source"] == "d1.md"

    a.upload("shared.md", b"# Shared\n\n## Fact\nzqshared lives in the server, not on a disk.\n")
    t0 = time.monotonic()
    while not b.search("zqshared", k=1, mode="bm25")["results"]:
        assert time.monotonic() - t0 < 5, "a write through one process was not visible through the other in 5 s"
        time.sleep(0.1)
    assert b.read_source("uploads/shared.md")["text"].startswith("# Shared")  # b's home has no such file
    b.delete_document("uploads/shared.md")
    t0 = time.monotonic()
    while a.search("zqshared", k=1, mode="bm25")["results"]:
        assert time.monotonic() - t0 < 5
        time.sleep(0.1)
    consistent(a)


LEASE_WORKER = textwrap.dedent("""
    import json, sys, time
    from brain.config import Settings
    from brain.store import open_store
    store, log = open_store(Settings()), open(sys.argv[1], "a")
    for _ in range(int(sys.argv[2])):
        with store.lease(wait=60) as lease:
            start = time.time()
            time.sleep(0.15)
            lease.check()
            log.write(json.dumps([start, time.time()]) + "\\n")
            log.flush()
""")


def _race(tmp_path: Path, chroma_server: str, index: str, rounds: int) -> Path:
    """Three writer processes take the lease of `index` `rounds` times each; their held spans, one per line."""
    log = tmp_path / "spans.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", LEASE_WORKER, str(log), str(rounds)],
                              env=env(chroma_server, tmp_path / f"w{i}", index, BRAIN_LEASE_TTL=10))
             for i in range(3)]
    assert all(p.wait(120) == 0 for p in procs)
    _no_overlap(log, 3 * rounds)
    return log


def _no_overlap(log: Path, expected: int) -> None:
    spans = sorted(json.loads(line) for line in log.read_text().splitlines())
    assert len(spans) == expected
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"two writers held the lease at once: {spans}"


def test_the_lease_admits_one_writer_at_a_time_across_processes(tmp_path, chroma_server):
    _race(tmp_path, chroma_server, "lease-race", 4)


def test_a_stale_lease_is_taken_over_by_exactly_one_of_racing_writers(tmp_path, chroma_server):
    """A holder that died leaves its lease expiring; three writers race for it: one at a time, after expiry."""
    store = open_store(Settings(home=tmp_path / "dead", chroma_url=chroma_server, index="lease-stale"))
    dead = ServerLease(store, ttl=2.0)
    dead.acquire()
    dead._stop.set()  # the holder dies: no more heartbeats, never released
    t0 = time.time()
    log = _race(tmp_path, chroma_server, "lease-stale", 2)
    first = min(json.loads(line)[0] for line in log.read_text().splitlines())
    assert first >= dead.expires - 0.5 and first - t0 < 15  # taken over only once expired, and soon after
    with pytest.raises(Unavailable, match="took the lease|expired"):
        dead.check()  # the dead holder, were it to wake, may not commit


KILLED_WRITER = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from brain.config import CorpusSpec, Settings
    from brain.service import Brain
    from brain.store.server import ServerStore
    point = sys.argv[2]
    real = getattr(ServerStore, point)
    def die(self, *a, **k):
        if point == "delete" and not a[0]:
            return real(self, *a, **k)
        os.kill(os.getpid(), 9)  # SIGKILL mid-write, holding the lease
    setattr(ServerStore, point, die)
    Brain(Settings()).ingest([CorpusSpec("k", Path(sys.argv[1]))])
""")


@pytest.mark.parametrize("point", ["save_manifest", "delete"])
def test_a_writer_killed_mid_ingest_loses_nothing(tmp_path, chroma_server, embedder, point):
    """Killed after upserting its chunks but before the manifest (or after it, before deleting stale chunks),
    holding the lease: readers keep the last complete index; the next writer waits out the lease, cleans the
    orphans up and leaves the index equal to the files."""
    index = f"killed-{point.replace('_', '-')}"
    folder = docs(tmp_path / "k", 3, "k")
    survivor = Brain(Settings(home=tmp_path / "s", chroma_url=chroma_server, index=index), embedder=embedder)
    survivor.ingest([CorpusSpec("k", folder)])
    before = survivor.stats()["chunks"]
    for f in folder.iterdir():  # a new version of every file for the writer about to die
        f.write_text(f.read_text().replace("about TMA", "about killed writers and TMA"))
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(folder), point],
                          env=env(chroma_server, tmp_path / "victim", index, BRAIN_LEASE_TTL=3), timeout=180)
    assert proc.returncode == -9
    if point == "save_manifest":  # readers still see the last complete index: the orphans are invisible
        assert survivor.stats()["chunks"] == before
        assert survivor.store.stored_ids() > survivor.store.load_manifest().ids()
    t0 = time.monotonic()
    survivor.ingest([CorpusSpec("k", folder)])
    assert time.monotonic() - t0 < 30
    rows = consistent(survivor)
    assert all("killed writers" in t for texts in rows.values() for t in texts if "zqk" in t)


API_SERVER = textwrap.dedent("""
    import sys
    from api.server import serve
    from brain.config import Settings
    serve(Settings(), port=int(sys.argv[1]), ingest_first=False)
""")


def test_two_api_processes_share_one_index_and_write_concurrently(tmp_path, chroma_server):
    """Two `brain serve` processes, empty homes, same BRAIN_INDEX: concurrent uploads through both (the same
    name too) end with every upload visible through both servers and the index equal to the stored files."""
    ports = _ports(2)
    procs = [subprocess.Popen([sys.executable, "-c", API_SERVER, str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              env=env(chroma_server, tmp_path / f"api{i}", "team-api", BRAIN_API_KEY="k"))
             for i, port in enumerate(ports)]
    try:
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        deadline = time.monotonic() + 180
        for url in urls:
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
                time.sleep(0.5)

        import threading
        errors = []

        def upload(url: str, who: int) -> None:
            with httpx.Client(base_url=url, timeout=120, headers={"X-API-Key": "k"}) as c:
                for i in range(4):
                    body = f"# From {who}\n\n## Part {i}\nzqw{who}n{i} written through server {who}.\n"
                    r = c.post("/documents", files={"file": (f"w{who}-{i}.md", body.encode())})
                    errors.extend([r.text] if r.status_code != 201 else [])
                r = c.post("/documents", files={"file": ("same.md", f"# Same\n\nzqsame by {who}\n".encode())})
                errors.extend([r.text] if r.status_code != 201 else [])

        threads = [threading.Thread(target=upload, args=(url, n)) for n, url in enumerate(urls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        time.sleep(1.5)  # one generation poll
        for url in urls:
            listed = {s["source"] for s in httpx.get(f"{url}/sources").json()}
            assert listed == {f"w{w}-{i}.md" for w in (0, 1) for i in range(4)} | {"same.md"}
            for w in (0, 1):
                hits = httpx.get(f"{url}/search", params={"q": f"zqw{w}n3", "mode": "bm25"}).json()["results"]
                assert hits and hits[0]["source"] == f"w{w}-3.md"
        reader = Brain(Settings(home=tmp_path / "check", chroma_url=chroma_server, index="team-api"))
        rows = consistent(reader)
        assert len(rows["uploads/same.md"]) == 1  # one version, never a mix of both writers'
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)


def test_an_index_of_another_model_or_chunker_is_refused_not_mixed(tmp_path, chroma_server, embedder):
    settings = Settings(home=tmp_path / "c", chroma_url=chroma_server, index="compat")
    brain = Brain(settings, embedder=embedder)
    brain.ingest([corpus(docs(tmp_path / "c-docs", 1, "c"))])
    m = brain.store.load_manifest()

    other_model = Brain(Settings(home=tmp_path / "c2", chroma_url=chroma_server, index="compat", model="other-model"),
                        embedder=embedder)
    with pytest.raises(Unavailable, match="embedded with model 'kernel-minilm', not 'other-model'"):
        other_model.search("zqc0")

    m.chunker = CHUNKER_VERSION - 1  # as if built by an older chunker
    brain.store.save_manifest(m)
    ids = brain.store.stored_ids()
    with pytest.raises(BrainError, match=f"chunker version {CHUNKER_VERSION - 1}, this brain has version "
                                         f"{CHUNKER_VERSION}"):
        brain.ingest([corpus(docs(tmp_path / "c-docs", 2, "c"))])
    with pytest.raises(BrainError, match="chunker version"):
        brain.upload("late.md", b"# Late\n\ntext\n")
    assert brain.store.stored_ids() == ids  # nothing deleted, nothing mixed in
    assert brain.search("zqc0", mode="bm25")["results"]  # reads are fine: chunks of one version only

    m.chunker, m.dim = CHUNKER_VERSION, 768  # as if embedded by a model of another dimension
    brain.store.save_manifest(m)
    with pytest.raises(BrainError, match="768-dimensional embeddings"):
        brain.upload("late.md", b"# Late\n\ntext\n")


def test_reading_an_unknown_index_creates_nothing_on_the_server(tmp_path, chroma_server):
    store = open_store(Settings(home=tmp_path / "r", chroma_url=chroma_server, index="never-written"))
    assert store.generation(max_age=0) == 0 and store.load_manifest().files == {}
    assert not [c.name for c in store.client.list_collections() if c.name.startswith("never-written")]


def test_a_bad_index_name_is_one_clear_error(tmp_path):
    with pytest.raises(BrainError, match="BRAIN_INDEX"):
        open_store(Settings(home=tmp_path, index="../x"))


def test_unreachable_server_is_one_clear_error(tmp_path, embedder):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    brain = Brain(Settings(home=tmp_path, chroma_url=f"http://127.0.0.1:{port}"), embedder=embedder)
    with pytest.raises(BrainError, match="cannot open the Chroma store"):
        brain.ingest([corpus(tmp_path)])
