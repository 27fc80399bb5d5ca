"""One argument grammar: every command that takes text takes unquoted words or `-` for stdin, one `k` limit
(brain.MAX_K) on the CLI, HTTP and MCP, and `--full` prints whole passages."""
import io
import json

import pytest

from brain import MAX_K
from brain.config import CorpusSpec, Settings
from cli.main import main

LONG = " ".join(f"Step {n}: the epilogue warp frees {n * 32} tensor memory columns after the MMA." for n in range(20))
RECORD = """## Pipeline stages 1 -> 3

**Verdict:** regressed

**Problem:** dual_gemm

**Techniques:** pipeline

**Lesson:** three stages made the small-M dual gemm slower.
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory, embedder):
    from brain.service import Brain
    root = tmp_path_factory.mktemp("grammar")
    docs = root / "docs"
    docs.mkdir()
    (docs / "tmem.md").write_text(f"# TMEM\n\n## Freeing\n\n{LONG}\n")
    (docs / "errors.md").write_text("# Errors\n\n## acc_empty\n\nNameError: name 'acc_empty' is not defined: a "
                                    "variable first assigned inside an if block is not visible after it in the DSL.\n")
    (docs / "attempts.md").write_text("# Attempts\n\n" + RECORD)
    Brain(Settings(home=root / ".brain"), embedder=embedder).ingest([CorpusSpec("docs", docs)])
    return root / ".brain"


def cli(monkeypatch, capsys, home, *args, stdin=None):
    monkeypatch.setenv("BRAIN_HOME", str(home))
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin or ""))
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command,words", [
    (("search",), ["tensor", "memory", "columns"]),
    (("pitfall",), ["NameError:", "name", "'acc_empty'", "is", "not", "defined"]),
    (("snippets", "no-such-pattern"), None),
    (("attempts",), ["has", "anyone", "tried", "more", "pipeline", "stages?"]),
    (("context",), ["tensor", "memory", "columns"]),
])
def test_text_as_words_quoted_or_from_stdin_is_the_same(monkeypatch, capsys, home, command, words):
    if words is None:  # snippets: the pattern first, then the question's words (an unknown pattern: one line)
        code, _, err = cli(monkeypatch, capsys, home, *command, "how", "are", "columns", "freed")
        assert code == 2 and err.startswith("error: unknown pattern 'no-such-pattern'")
        return
    _, unquoted, err = cli(monkeypatch, capsys, home, *command, *words, "--json")
    assert err == ""
    _, quoted, _ = cli(monkeypatch, capsys, home, *command, " ".join(words), "--json")
    _, piped, _ = cli(monkeypatch, capsys, home, *command, "-", "--json", stdin=" ".join(words))
    answers = [{k: v for k, v in json.loads(out).items() if k not in ("took_ms", "load_ms")}
               for out in (unquoted, quoted, piped)]
    assert answers[0] == answers[1] == answers[2]
    assert answers[0]["query"] == " ".join(words) and (answers[0].get("results") or answers[0].get("text"))


@pytest.mark.parametrize("command", [("search", "tmem"), ("pitfall", "NameError"), ("attempts",),
                                     ("context", "tmem"), ("search", "tmem", "--mode", "bm25")])
def test_one_k_limit_on_the_command_line(monkeypatch, capsys, home, command):
    code, out, err = cli(monkeypatch, capsys, home, *command, "-k", str(MAX_K + 1))
    assert code == 2 and out == "" and err == f"error: k must be between 1 and {MAX_K}\n"
    code, _, err = cli(monkeypatch, capsys, home, *command, "-k", str(MAX_K))
    assert code == 0, err


def test_plain_output_says_a_passage_was_cut_and_full_shows_it(monkeypatch, capsys, home):
    _, cut, _ = cli(monkeypatch, capsys, home, "search", "epilogue", "warp", "frees", "columns", "-k", "1")
    assert LONG not in cut and "more characters: --full shows the whole passage" in cut
    _, full, _ = cli(monkeypatch, capsys, home, "search", "epilogue", "warp", "frees", "columns", "-k", "1", "--full")
    assert LONG in full.replace("\n   | ", " ") and "--full shows" not in full
