"""The command line as a user meets it: JSON contracts, one-line errors, exit codes."""
import json
import os
import subprocess
import sys

import pytest

from brain.config import PROJECT_ROOT


def brain_cli(*args, home, stdin=None):
    env = {**os.environ, "BRAIN_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env,
                          cwd=PROJECT_ROOT, input=stdin, timeout=300)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("cli")
    r = brain_cli("ingest", home=home)
    assert r.returncode == 0, r.stderr
    assert "files:" in r.stdout and "chunks:" in r.stdout
    return home


def test_search_json_contract(home):
    r = brain_cli("search", "variables defined inside if blocks", "--json", "--k", "3", home=home)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"query", "took_ms", "load_ms", "results"} <= set(out)
    assert len(out["results"]) == 3 and out["match"] in ("strong", "weak")
    plain = brain_cli("search", "zzqqxxnonexistentword", home=home)
    assert plain.returncode == 0 and plain.stdout.startswith("match: none")
    for rank, res in enumerate(out["results"], 1):
        assert {"rank", "score", "text", "source", "start_line", "end_line", "section", "kind", "tags",
                "language"} <= set(res)
        assert res["rank"] == rank


def test_search_takes_unquoted_words_and_short_k(home):
    """An agent's shell call often forgets the quotes: the words are the query, `-k` / `-n` the count."""
    quoted = json.loads(brain_cli("search", "variables defined inside if blocks", "--json", "--k", "2", home=home).stdout)
    for flag in ("-k", "-n"):
        r = brain_cli("search", "variables", "defined", "inside", "if", "blocks", flag, "2", "--json", home=home)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["query"] == "variables defined inside if blocks"
        assert [x["text"] for x in out["results"]] == [x["text"] for x in quoted["results"]]


def test_chunks_json_has_same_fields(home):
    r = brain_cli("chunks", "--source", "000_", "--json", home=home)
    rows = json.loads(r.stdout)
    assert rows and all(set(["text", "source", "start_line", "end_line", "section", "kind", "tags", "language"])
                        <= set(row) and "rank" not in row for row in rows)


@pytest.mark.parametrize("args,message", [
    (("search", "   "), "empty query"),
    (("ingest", "/no/such/path"), "does not exist"),
    (("snippets", "no-such-pattern"), "unknown pattern"),
    (("search", "x", "--k", "0"), "k must be"),
    (("ingest", "tests/__pycache__/no-such-dir-for-sure"), "does not exist"),
])
def test_errors_are_one_line(home, args, message):
    r = brain_cli(*args, home=home)
    assert r.returncode != 0
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_corrupt_manifest_is_one_line(tmp_path):
    (tmp_path / "manifest.json").write_text("garbage")
    r = brain_cli("stats", home=tmp_path)
    assert r.returncode == 2 and "corrupt" in r.stderr and "Traceback" not in r.stderr


def test_stats_and_patterns(home):
    st = json.loads(brain_cli("stats", "--json", home=home).stdout)
    assert st["documents"] >= 5 and st["chunks"] > 50 and "docs_corpus" in st["corpora"]
    rows = json.loads(brain_cli("patterns", "--json", home=home).stdout)
    assert {"s2t-copy", "tma-load", "pipeline-setup", "tmem-alloc"} <= {r["pattern"] for r in rows}


def test_empty_corpus_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    r = brain_cli("ingest", str(tmp_path / "empty"), home=tmp_path / "home")
    assert r.returncode == 2 and "nothing to ingest" in r.stderr and "Traceback" not in r.stderr
