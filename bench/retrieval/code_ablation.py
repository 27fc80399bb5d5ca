"""What else a code chunk could show the retrievers, measured on an index that already holds the code.

Usage: python bench/retrieval/code_ablation.py [--split tune|report] EVAL_JSON@BRAIN_HOME   (default: the tune half)
e.g.   python bench/retrieval/code_ablation.py bench/data/eval_kernel_code.json@/tmp/h/code

The chunks (text and line ranges) stay as brain/chunking/python.py cut them. Each variant rewrites, in memory,
what the retrievers see of every code chunk: its bm25 document (context line + text) and/or its embedding
text (context words + natural-language view), re-embeds what changed, and prints bm25 / dense / hybrid
MRR@10 and hybrid hit@5 with the shipped fusion. The first row is the index as ingested. Variants:
  context: the heading comments above the piece (`# ===` / `# Mainloop` / `# ===`), the first sentence of the
           enclosing class's (or any definition's) docstring, no signature at all, the file's path words
           without its docstring sentence, or a description string placed after the imports (CUTLASS
           examples) taken as the docstring;
  bm25:    the context line counted 0 or 2 times for code, the natural-language view instead of (or beside)
           the source;
  view:    identifier words cut to call targets / attributes / keywords, to words of 3+ letters, without
           the words in half the file's pieces, or followed by the thesaurus's plain phrase for an
           abbreviation (smem -> shared memory).
"""
from __future__ import annotations

import ast
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brain import BrainError  # noqa: E402
from brain.chunking import SECTION_SEP  # noqa: E402
from brain.chunking import python as py  # noqa: E402
from brain.evaluate import evaluate  # noqa: E402
from brain.lexical import LexicalIndex  # noqa: E402
from brain.thesaurus import THESAURUS  # noqa: E402
from fusion_sweep import open_sets  # noqa: E402  (bench/retrieval/fusion_sweep.py, beside this script)

RULE = re.compile(r"^\s*#[\s#=\-/*~_+]*$")  # a comment line of rule characters only (or a bare `#`)


def headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first rule line, indentation, first text line) of each comment heading framed by rule lines."""
    text = [ln.lstrip().startswith("#") and not RULE.match(ln) for ln in lines]
    out = []
    for i, line in enumerate(lines):
        if not RULE.match(line) or (i and text[i - 1]):
            continue
        n = 1
        while n <= 12 and i + n < len(lines) and text[i + n]:
            n += 1
        if 1 < n <= 12 and i + n < len(lines) and RULE.match(lines[i + n]):
            out.append((i + 1, len(line) - len(line.lstrip()), lines[i + 1].strip(" #=-/*~_")[:60]))
    return out


def heading_trail(heads, defs, lines: list[str], start: int) -> list[str]:
    """The headings above line `start` in its innermost definition still open at its indentation (2 at most)."""
    lo = max((a for a, b in defs if a < start <= b), default=0)
    first = next((x for x in lines[start - 1:] if x.strip()), "")
    indent = len(first) - len(first.lstrip())
    trail: list[tuple[int, int, str]] = []
    for top, ind, title in heads:
        if top > start:
            break
        if top > lo and ind <= indent:
            trail = [t for t in trail if t[1] < ind] + [(top, ind, title)]
    return [t for top, _, t in trail if top < start][-2:]


def sentence(doc: str, limit: int = 80) -> str:
    s = " ".join(re.split(r"(?<=[.!?])\s|\n\s*\n", doc.strip(), maxsplit=1)[0].split())
    return s if len(s) <= limit else s[:limit - 2].rsplit(" ", 1)[0] + " …"


def description(tree: ast.Module) -> str:
    """The module docstring, or else a string statement ahead of the first definition (CUTLASS examples put
    their description after the licence comment and the imports, where it is no docstring to Python)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if py._is_docstring(stmt):
            return stmt.value.value
    return ""


def context_variants(snap, roots: dict[str, str]) -> dict[str, dict[str, str]]:
    """variant -> {chunk id: new context} for headings, class docstring, any docstring, no signature."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    files: dict[str, tuple] = {}
    for i, m in zip(snap.ids, snap.metas):
        if m["kind"] != "code" or m.get("region"):
            continue
        key = (m["corpus"], m["source"])
        if key not in files:
            text = (Path(roots[m["corpus"]]) / m["source"]).read_text()
            tree, lines = ast.parse(text), text.splitlines()
            nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            docs = sorted((n.lineno, n.end_lineno, n.body[0].lineno, n.body[0].end_lineno,
                           isinstance(n, ast.ClassDef), sentence(ast.get_docstring(n)))
                          for n in nodes if ast.get_docstring(n))
            files[key] = (lines, headings(lines), sorted((n.lineno, n.end_lineno) for n in nodes), docs,
                          description(tree))
        lines, heads, defs, docs, about = files[key]
        a, b, ctx = m["start_line"], m["end_line"], m["context"]
        out["heading comments in context"][i] = SECTION_SEP.join([ctx] + heading_trail(heads, defs, lines, a))
        for label, classes_only in (("enclosing class docstring in context", True),
                                    ("enclosing definition docstring in context", False)):
            inner = [d for d in docs if d[0] < a <= d[1] and not (a <= d[2] and d[3] <= b)  # its docstring not in it
                     and (d[4] or not classes_only)]
            out[label][i] = f"{ctx}{SECTION_SEP}({max(inner)[5]})" if inner else ctx
        out["no signature in context"][i] = re.sub(r": (?:async )?(?:def|class) [^›]*?(?= › |$)", "", ctx)
        path, _, rest = ctx.partition(SECTION_SEP)
        words = re.sub(r" [(].*[)]$", "", path)
        out["file context: path words only (no docstring sentence)"][i] = f"{words}{SECTION_SEP}{rest}"
        room = py.FILE_CONTEXT - len(words) - 3  # a description after the imports (CUTLASS examples) as docstring
        if about and room >= 20 and words == path:
            path = f"{words} ({sentence(re.sub(r'[=~*#-]{3,}', ' ', about), room)})"
        out["file context: a description after the imports as its docstring"][i] = \
            f"{path}{SECTION_SEP}{rest}"
    return out


def _gloss() -> dict[str, str]:
    """A one-word name of a thesaurus row -> the row's first plain phrase (`smem` -> `shared memory`)."""
    out = {}
    for row in THESAURUS:
        plain = [p.lower() for p in row if re.fullmatch(r"[A-Za-z][A-Za-z -]*", p)]
        for p in row:
            words = py.identifier_words(re.sub(r"[.\-]", "_", p))
            gloss = next((x for x in plain if x != p.lower()), None)
            if len(words) == 1 and gloss:
                out.setdefault(words[0], gloss)
    return out


def view_variants(snap) -> dict[str, dict[str, str]]:
    """variant -> {chunk id: embedding text} with the identifier-word line of the view rewritten."""
    gloss = _gloss()
    out: dict[str, dict[str, str]] = defaultdict(dict)
    by_file = defaultdict(list)
    for i, t, m in zip(snap.ids, snap.texts, snap.metas):
        if m["kind"] == "code" and not m.get("region"):
            by_file[m["source"]].append((i, t, m))
    for chunks in by_file.values():
        views = [py.code_view(t).split("\n") for _, t, _ in chunks]
        df = Counter(w for v in views for w in set(v[-1].split()))
        for (i, t, m), v in zip(chunks, views):
            head = " ".join(dict.fromkeys(w for ident in py._WORD.findall(m["context"])
                                          for w in py.identifier_words(ident) if w not in py._NOISE))
            prose, words = v[:-1], v[-1].split()
            calls = [w for line in t.splitlines() for x in re.findall(r"(\w+)\s*\(|\.(\w+)|(\w+)=", line.split("#")[0])
                     for part in x if part for w in py.identifier_words(part)]
            calls = [w for w in dict.fromkeys(calls) if w not in py._NOISE and len(w) > 1]
            glossed = []
            for w in words:
                glossed += [w] + ([gloss[w]] if w in gloss and gloss[w] not in glossed else [])
            rows = {"view: identifier words of calls, attributes, keywords only": calls,
                    "view: identifier words of 3+ letters only": [w for w in words if len(w) >= 3],
                    "view: without words in half the file's pieces":
                        [w for w in words if len(chunks) < 4 or df[w] < len(chunks) / 2],
                    "view: thesaurus phrase after each abbreviation": glossed}
            for label, ws in rows.items():
                out[label][i] = f"{head}\n\n" + "\n".join(prose + ([" ".join(ws)] if ws else []))
    return out


def main() -> None:
    args = sys.argv[1:]
    split = "tune"
    if args[:1] == ["--split"]:
        split, args = args[1], args[2:]
    if len(args) != 1 or "@" not in args[0]:
        sys.exit(__doc__)
    (name, questions, brain), = open_sets(args)
    searcher = brain.searcher
    snap = searcher.snapshot()
    roots = {c: v["root"] for c, v in brain.store.load_manifest().corpora.items()}
    code = {i for i, m in zip(snap.ids, snap.metas) if m["kind"] == "code"}
    if not code:
        raise BrainError(f"no code chunks in the index at {args[0].partition('@')[2]}: `brain ingest` the code first")
    pos = {i: k for k, i in enumerate(snap.ids)}
    base_vectors, base_lexical = snap.vectors, snap.lexical
    contexts = {i: m["context"] for i, m in zip(snap.ids, snap.metas)}

    def embedding_text(i: str, context: str) -> str:
        m = snap.metas[pos[i]]
        chunk = py.CodeChunk(text=snap.texts[pos[i]], source=m["source"], start_line=m["start_line"],
                             end_line=m["end_line"], section=m["section"], kind="code", language="python",
                             context=context)
        return chunk.embedding_text()

    def lexical(doc) -> LexicalIndex:
        return LexicalIndex.build(snap.ids, [doc(i, contexts[i], t) if i in code else f"{contexts[i]}\n{t}"
                                             for i, t in zip(snap.ids, snap.texts)])

    def vectors(texts: dict[str, str]):
        vec = base_vectors.copy()
        ids = list(texts)
        for i, v in zip(ids, searcher.embedder.encode([texts[i] for i in ids])):
            vec[pos[i]] = v
        return vec

    def row(label: str) -> None:
        r = evaluate(searcher, questions, ("bm25", "dense", "hybrid"), split=split)["modes"]
        print(f"{label:<62} {r['bm25']['mrr@10']:>6.3f} {r['dense']['mrr@10']:>6.3f} {r['hybrid']['mrr@10']:>6.3f}"
              f" {r['hybrid']['hit@5']:>6.3f} {r['hybrid']['mean_chars@5']:>6.0f}", flush=True)

    n = sum(1 for q in questions if split == "all" or q["split"] == split)
    print(f"{name}, {split} half ({n} questions), {len(code)} code chunks")
    print(f"{'variant':<62} {'bm25':>6} {'dense':>6} {'hybrid':>6} {'hit@5':>6} {'chars':>6}")
    row("as ingested")
    for label, weight in (("bm25: code context line counted 0 times", 0),
                          ("bm25: code context line counted 2 times", 2)):
        snap.lexical = lexical(lambda i, c, t, w=weight: f"{' '.join([c] * w)}\n{t}")
        row(label)
    snap.lexical = lexical(lambda i, c, t: f"{c}\n{py.code_view(t)}")
    row("bm25: natural-language view instead of the source")
    snap.lexical = lexical(lambda i, c, t: f"{c}\n{t}\n{py.code_view(t)}")
    row("bm25: natural-language view beside the source")
    for label, ctx in context_variants(snap, roots).items():
        snap.lexical = lexical(lambda i, c, t: f"{ctx.get(i, c)}\n{t}")
        snap.vectors = vectors({i: embedding_text(i, c) for i, c in ctx.items()})
        row(label)
    snap.lexical = base_lexical
    for label, texts in view_variants(snap).items():
        snap.vectors = vectors(texts)
        row(label)


if __name__ == "__main__":
    try:
        main()
    except (BrainError, OSError) as e:  # a missing question file or corpus file, an empty index
        sys.exit(f"error: {e}")
