"""The HTTP API on the shared session index: reads, errors, auth, sources, context, kernels."""
from __future__ import annotations

import pytest

from brain.context import count_tokens
SCOPING_ERROR = "NameError: name 'acc_empty' is not defined"


def test_health_and_stats(client):
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["chunks"] > 50
    st = client.get("/stats").json()
    from brain.chunking import SUPPORTED_SUFFIXES
    from brain.config import PROJECT_ROOT
    worklogs = [p for p in (PROJECT_ROOT / "docs_corpus").iterdir() if p.suffix in SUPPORTED_SUFFIXES]
    assert st["documents"] == len(worklogs) + 1  # + the sample kernel
    assert set(st["corpora"]) == {"docs_corpus", "sample_kernels"}
    assert st["kinds"]["code"] >= 1 and st["model"] and st["index"] and st["last_ingest"]
    assert st["patterns"]["tma-load"] >= 1


def test_search_get_and_post_agree_with_the_core(client, api_brain):
    r = client.get("/search", params={"q": "variable scoping in dynamic control flow", "k": 3})
    assert r.status_code == 200
    body = r.json()
    assert {"query", "took_ms", "load_ms", "results"} <= set(body)
    assert len(body["results"]) == 3 and body["match"] == "strong"
    nothing = client.get("/search", params={"q": "zzqqxxnonexistentword"}).json()
    assert nothing["match"] == "none" and nothing["results"] == []
    assert client.get("/pitfalls", params={"error": "zzqqxxnonexistentword"}).json()["match"] == "none"
    assert client.get("/snippets", params={"pattern": "tma-load"}).json()["match"] == "strong"
    top = body["results"][0]
    assert top["source"] == "000_51fd70c217354f0e.txt" and "Scoping" in top["text"]
    assert set(top) == {"rank", "score", "text", "source", "start_line", "end_line", "section", "kind", "tags",
                        "language", "corpus", "patterns", "superseded_by", "conflicts_with", "attempt"}
    post = client.post("/search", json={"q": "variable scoping in dynamic control flow", "k": 3}).json()
    core = api_brain.search("variable scoping in dynamic control flow", 3)
    assert [x["text"] for x in post["results"]] == [x["text"] for x in body["results"]] \
        == [x["text"] for x in core["results"]]


def test_search_filters(client):
    r = client.get("/search", params={"q": "tma", "kind": "code", "k": 5}).json()
    assert r["results"] and all(x["kind"] == "code" for x in r["results"])
    r = client.get("/search", params={"q": "pipeline", "tag": "UMMA"}).json()  # alias of tcgen05
    assert all("tcgen05" in x["tags"] for x in r["results"])
    r = client.get("/search", params={"q": "copy", "pattern": "tma-load"}).json()
    assert r["results"] and all("tma-load" in x["patterns"] for x in r["results"])
    r = client.get("/search", params={"q": "stages", "source": "001_"}).json()
    assert r["results"] and all(x["source"].startswith("001_") for x in r["results"])


@pytest.mark.parametrize("params, fragment", [
    ({"q": "x", "kind": "bogus"}, "unknown kind 'bogus'"),
    ({"q": "x", "tag": "no-such-tag"}, "unknown tag 'no-such-tag'"),
    ({"q": "x", "corpus": "nope"}, "unknown corpus 'nope'"),
    ({"q": "   "}, "empty query"),
])
def test_bad_search_input_is_a_400_with_a_message(client, params, fragment):
    r = client.get("/search", params=params)
    assert r.status_code == 400 and fragment in r.json()["error"]


@pytest.mark.parametrize("url", ["/search", "/search?q=x&k=0", "/search?q=x&k=51", "/search?q=x&mode=fuzzy",
                                 "/context?q=x&budget_tokens=10", "/sources/docs_corpus/000_51fd70c217354f0e.txt?start=0"])
def test_validation_errors_are_422(client, url):
    r = client.get(url)
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)


def test_pitfalls_get_and_post(client):
    r = client.get("/pitfalls", params={"error": SCOPING_ERROR}).json()
    assert "acc_empty" in r["results"][0]["text"]
    traceback = ('Traceback (most recent call last):\n  File "kernel.py", line 316, in kernel\n'
                 '    cute.copy(...)\n' + SCOPING_ERROR + "\n")
    r = client.post("/pitfalls", json={"error": traceback, "k": 2}).json()
    assert len(r["results"]) <= 2 and "acc_empty" in r["results"][0]["text"]


def test_snippets_and_patterns(client):
    r = client.get("/snippets", params={"pattern": "tma-load"}).json()
    assert r["pattern"] == "tma-load" and r["results"]
    assert all("tma-load" in x["patterns"] for x in r["results"])
    assert any("tma_partition" in x["text"] for x in r["results"])
    bad = client.get("/snippets", params={"pattern": "warp-magic"})
    assert bad.status_code == 400 and "unknown pattern" in bad.json()["error"]
    pats = {p["pattern"]: p for p in client.get("/patterns").json()}
    assert pats["tmem-alloc"]["snippets"] >= 1 and pats["tma-load"]["description"]
    tags = {t["tag"] for t in client.get("/tags").json()}
    assert {"tma", "tmem"} <= tags


def test_sources_read_exact_lines(client, api_settings):
    paths = {s["path"] for s in client.get("/sources").json()}
    assert "docs_corpus/000_51fd70c217354f0e.txt" in paths and "sample_kernels/sample_kernel.py" in paths
    r = client.get("/sources/docs_corpus/000_51fd70c217354f0e.txt", params={"start": 35, "end": 37}).json()
    from brain.config import PROJECT_ROOT
    lines = (PROJECT_ROOT / "docs_corpus/000_51fd70c217354f0e.txt").read_text().splitlines()
    assert r["text"] == "\n".join(lines[34:37]) and r["total_lines"] == len(lines)
    assert (r["start_line"], r["end_line"]) == (35, 37)


@pytest.mark.parametrize("path", ["docs_corpus/%2e%2e/%2e%2e/etc/passwd", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd",
                                  "docs_corpus/../pyproject.toml", "kernels/../../README.md", "docs_corpus/nope.txt"])
def test_sources_outside_the_corpora_are_unreachable(client, path):
    r = client.get(f"/sources/{path}")
    assert r.status_code == 404, r.text
    assert "root:" not in r.text and "[project]" not in r.text


def test_sources_bad_range(client):
    r = client.get("/sources/docs_corpus/000_51fd70c217354f0e.txt", params={"start": 9000, "end": 9001})
    assert r.status_code == 400 and "past the end" in r.json()["error"]
    r = client.get("/sources/docs_corpus/000_51fd70c217354f0e.txt", params={"start": 5, "end": 2})
    assert r.status_code == 400 and "start <= end" in r.json()["error"]


@pytest.mark.parametrize("budget", [200, 600, 3000])
def test_context_fits_the_budget_and_cites(client, budget):
    r = client.get("/context", params={"q": "TMA store epilogue", "budget_tokens": budget}).json()
    assert r["used_tokens"] == count_tokens(r["text"]) <= budget
    assert r["citations"], "at least one passage (cut at a line if need be)"
    for c in r["citations"]:
        assert f"[{c['n']}] {c['citation']}" in r["text"]
        src = client.get(f"/sources/{c['path']}", params={"start": c["start_line"], "end": c["end_line"]})
        assert src.status_code == 200
    small = client.get("/context", params={"q": "TMA store epilogue", "budget_tokens": 200}).json()
    big = client.get("/context", params={"q": "TMA store epilogue", "budget_tokens": 3000}).json()
    assert len(big["citations"]) >= len(small["citations"])


def test_writes_need_the_key(client):
    files = {"file": ("note.md", b"# Note\nsome text\n")}
    r = client.post("/documents", files=files)
    assert r.status_code == 401 and "API key" in r.json()["error"]
    r = client.post("/documents", files=files, headers={"X-API-Key": "wrong"})
    assert r.status_code == 401
    assert client.delete("/documents/uploads/note.md").status_code == 401
    assert client.post("/ingest").status_code == 401
    assert client.post("/kernels/gemv/run", json={"backend": "reference"}).status_code == 401


def test_writes_refused_when_no_key_is_configured(api_brain):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.config import Settings
    app = create_app(Settings(home=api_brain.settings.home, api_key=None), brain=api_brain)
    with TestClient(app) as c:
        r = c.post("/documents", files={"file": ("n.md", b"# N\ntext\n")}, headers={"X-API-Key": "anything"})
        assert r.status_code == 403 and "BRAIN_API_KEY" in r.json()["error"]
        assert c.get("/search", params={"q": "tma"}).status_code == 200  # reads stay open


@pytest.mark.parametrize("name, data, fragment", [
    ("evil.exe", b"# x\ntext\n", "must be letters"),
    ("big.md", b"# x\n" + b"y" * 1_000_001, "limit"),
    ("bin.md", b"# x\n\x00\x01", "binary"),
    ("latin.md", "# caf\xe9\n".encode("latin-1"), "UTF-8"),
    ("empty.md", b"   \n", "empty"),
])
def test_rejected_upload_changes_nothing(client, api_brain, key_header, name, data, fragment):
    before = (api_brain.store.load_manifest().generation, client.get("/sources").json())
    r = client.post("/documents", files={"file": (name, data)}, headers=key_header)
    assert r.status_code == 400 and fragment in r.json()["error"], r.text
    assert (api_brain.store.load_manifest().generation, client.get("/sources").json()) == before
    assert not (api_brain.settings.home / "uploads" / "uploads" / name).exists()


def test_delete_of_a_shipped_file_is_refused(client, key_header):
    r = client.delete("/documents/docs_corpus/000_51fd70c217354f0e.txt", headers=key_header)
    assert r.status_code == 400 and "only uploaded documents" in r.json()["error"]
    assert client.delete("/documents/uploads/never-there.md", headers=key_header).status_code == 404


def test_ingest_rescans_the_index_corpora_incrementally(client, api_settings, api_brain):
    r = client.post("/ingest", headers={"Authorization": f"Bearer {api_settings.api_key}"})
    assert r.status_code == 200
    s = r.json()
    folders = {name: c["files"] for name, c in api_brain.stats()["corpora"].items() if not c["uploads"]}
    assert set(folders) == {"docs_corpus", "sample_kernels"}  # the index's own: never the defaults' kernels/
    assert s["files_changed"] == 0 and s["files_unchanged"] == sum(folders.values()) >= 6, s
    assert s["files_seen"] == s["files_changed"] + s["files_unchanged"] + len(s["skipped"])


def test_named_folders_are_for_the_local_token_only(client, key_header, tmp_path):
    (tmp_path / "x.md").write_text("# X\n\nsecret notes on the server's disk\n")
    body = {"corpora": [{"name": "x", "root": str(tmp_path)}]}
    r = client.post("/ingest", json=body, headers=key_header)  # an API key from elsewhere names no server paths
    assert r.status_code == 403 and "local token" in r.json()["error"]
    r = client.post("/ingest", json=body, headers={"X-Brain-Token": "guessed"})
    assert r.status_code == 401
    assert "x" not in client.get("/stats").json()["corpora"]
    r = client.delete("/corpora/never-there", headers=key_header)
    assert r.status_code == 404 and "no corpus named 'never-there'" in r.json()["error"]


def test_errors_are_json_never_tracebacks(client, api_brain, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("secret internals")
    monkeypatch.setattr(api_brain, "search", boom)
    r = client.get("/search", params={"q": "tma"})
    assert r.status_code == 500
    assert r.json() == {"error": "internal error (RuntimeError); the server log has the details"}
    assert client.get("/no/such/route").json() == {"error": "Not Found"}


def test_openapi_and_docs(client):
    schema = client.get("/openapi.json").json()
    for path in ("/health", "/stats", "/search", "/pitfalls", "/snippets", "/patterns", "/sources",
                 "/sources/{path}", "/context", "/documents", "/documents/{path}", "/ingest", "/kernels",
                 "/kernels/{problem}/run"):
        assert path in schema["paths"], path
    assert client.get("/docs").status_code == 200


def test_search_page_is_served(client):
    r = client.get("/")
    assert r.status_code == 200 and 'id="q"' in r.text and "/static/app.js" in r.text
    for asset in ("app.js", "highlight.js", "passage.js", "style.css"):
        assert client.get(f"/static/{asset}").status_code == 200
    assert "http://" not in r.text and "https://" not in r.text  # nothing from a CDN


def test_health_reports_a_broken_index(tmp_path, embedder):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.config import Settings
    from brain.service import Brain
    settings = Settings(home=tmp_path / "home")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "manifest.json").write_text("{not json")
    with TestClient(create_app(settings, brain=Brain(settings, embedder=embedder))) as c:
        r = c.get("/health")
        assert r.status_code == 503 and "corrupt" in r.json()["error"]
        r = c.get("/search", params={"q": "tma"})
        assert r.status_code == 503 and "brain ingest --rebuild" in r.json()["error"]


def test_oversized_bodies_are_refused_before_reading(client, key_header):
    r = client.post("/documents", files={"file": ("big.md", b"# x\n" + b"y" * 3_000_000)}, headers=key_header)
    assert r.status_code == 413 and "over the limit" in r.json()["error"]
    r = client.post("/pitfalls", content=b'{"error": "' + b"x" * 3_000_000 + b'"}',
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "over the limit" in r.json()["error"]

    def chunks():  # no Content-Length: counted while read
        for _ in range(40):
            yield b"x" * 100_000
    r = client.post("/pitfalls", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "over the limit" in r.json()["error"]
