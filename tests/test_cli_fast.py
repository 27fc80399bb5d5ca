"""The command line's cold path: the index is found (never invented), reads need neither torch nor Chroma,
a closed pipe ends quietly, and a search reports its own time apart from start-up."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from brain.config import PROJECT_ROOT, CorpusSpec, Settings, find_home

HEAVY = ("torch", "sentence_transformers", "chromadb", "transformers")


def run_cli(*args, home=None, cwd=PROJECT_ROOT, code=None, stdout=subprocess.PIPE):
    """`brain ARGS` in a fresh process (or `code` run after it), BRAIN_HOME set only when `home` is given."""
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_HOME", "BRAIN_CHROMA_URL")}
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(PROJECT_ROOT))
    if home is not None:
        env["BRAIN_HOME"] = str(home)
    script = ("import sys, json\nfrom cli.main import main\ncode = main(sys.argv[1:])\n" + (code or "")
              + "\nsys.exit(code)")
    return subprocess.run([sys.executable, "-c", script, *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env, cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory, embedder):
    """A folder with its own `.brain` (a small corpus ingested, snapshot file written) and a subfolder."""
    from brain.service import Brain
    root = tmp_path_factory.mktemp("project")
    docs = root / "docs"
    docs.mkdir()
    for n in range(6):
        (docs / f"note{n}.md").write_text(f"# Note {n}\n\n## TMEM\n\nAllocate {32 * (n + 1)} tensor memory "
                                          f"columns before the MMA; free them in the epilogue warp {n}.\n")
    brain = Brain(Settings(home=root / ".brain"), embedder=embedder)
    brain.ingest([CorpusSpec("docs", docs)])
    brain.snapshot()
    (root / "sub" / "deeper").mkdir(parents=True)
    return root


def test_nearest_brain_folder_is_found_like_git(project, monkeypatch):
    monkeypatch.delenv("BRAIN_HOME", raising=False)
    assert find_home(project / "sub" / "deeper") == project / ".brain"
    r = run_cli("stats", "--json", cwd=project / "sub" / "deeper")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert str(project / ".brain") in (st.get("location"), st.get("index"))  # where `stats` names the folder


def test_brain_home_wins_over_discovery(project, tmp_path, monkeypatch):
    monkeypatch.setenv("BRAIN_HOME", str(tmp_path / "elsewhere"))
    assert find_home(project / "sub") == tmp_path / "elsewhere"


@pytest.mark.parametrize("command", [("search", "x"), ("pitfall", "NameError: x"), ("stats",), ("chunks",),
                                     ("patterns",), ("snippets", "tmem-alloc")])
def test_no_index_is_an_error_and_creates_nothing(tmp_path, command):
    home = tmp_path / "nothing" / ".brain"
    r = run_cli(*command, home=home, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: no index at {home}: run brain ingest"
    assert not (tmp_path / "nothing").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [("stats",), ("patterns",), ("chunks",), ("search", "tensor memory columns"),
                                     ("ingest", "docs", "--corpus", "docs")])
def test_reads_and_noop_ingest_import_neither_torch_nor_chroma(project, command):
    r = run_cli(*command, cwd=project, code="print('LOADED', json.dumps([m for m in %r if m in sys.modules]))"
                % (HEAVY,))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "LOADED []"
    if command[0] == "ingest":
        assert "0 changed" in r.stdout and "6 seen" in r.stdout


def test_search_reports_search_time_apart_from_load(project):
    r = run_cli("search", "how many tensor memory columns", "--json", cwd=project)
    out = json.loads(r.stdout)
    assert {"took_ms", "load_ms"} <= set(out) and out["load_ms"] > 0 and out["took_ms"] >= 0
    assert out["results"] and "tensor memory" in out["results"][0]["text"]


def test_search_from_the_snapshot_file_matches_the_store(project, embedder):
    """The file cache and Chroma give the same ranking (the file is what a fresh CLI process reads)."""
    from brain.service import Brain
    settings = Settings(home=project / ".brain")
    cold = Brain(settings, embedder=embedder)
    warm = Brain(settings, embedder=embedder)
    warm.searcher.snapshots.cache.path = project / "no-cache-here.npz"  # forces the read from Chroma
    q = "free the tensor memory in the epilogue"
    assert [h.id for h in cold.searcher.search(q, 5)] == [h.id for h in warm.searcher.search(q, 5)]
    assert cold.searcher.snapshot().vectors.shape == warm.searcher.snapshot().vectors.shape


def test_broken_pipe_exits_quietly(project):
    env = {**os.environ, "BRAIN_HOME": str(project / ".brain"), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen([sys.executable, "-m", "cli", "chunks", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=PROJECT_ROOT)
    p.stdout.close()  # the reader is gone before the first byte, as `| head -0`
    _, err = p.communicate(timeout=120)
    assert p.returncode == 141
    assert err == b""


def test_ingest_progress_counts_chunks_and_files(embedder, capsys, monkeypatch):
    texts = [f"chunk {n} of file {n % 3}" for n in range(10)]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal: one line rewritten in place
    vecs = embedder.encode(texts, batch_size=4, progress=True, groups=[f"f{n % 3}" for n in range(10)])
    err = capsys.readouterr().err
    assert vecs.shape == (10, 384)
    assert "embedding: 10/10 chunks · 3/3 files ·" in err and "chunks/s" in err and "ETA" in err
    assert err.endswith("\r\x1b[K")  # the line is wiped before the summary prints
    assert np.allclose(vecs, embedder.encode(texts), atol=1e-5)  # batching and order change nothing


def test_a_short_ingest_is_quiet_when_not_a_terminal(tmp_path):
    docs = tmp_path / "d"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nOne short note about TMA.\n")
    r = run_cli("ingest", str(docs), home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert "embedding:" not in r.stderr and "loading" not in r.stderr
    assert r.stdout.startswith("files: 1 seen: 1 changed, 0 unchanged, 0 skipped; 0 removed")
