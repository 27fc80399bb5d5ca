"""Ingest the two sample corpora into a fresh temporary index, time it, then measure retrieval on them.

Usage: python bench/retrieval/sample_corpora.py [--questions FILE ...] [--split report|tune|all] [--modes bm25,dense,hybrid]
                                      [--root /work/shared/sample-corpora] [--keep DIR]

Prints the ingest figures (wall time, files, chunks, chunks/s, MB/s, the same texts' raw encode time as in
bench/serving/ingest_bench.py, re-ingest of the unchanged corpora, chunk lengths) and, per mode,
hit@1, hit@5, MRR@10, nDCG@10, mean length of the top-5 returned passages and median latency, twice: with
each question restricted to its own corpus (the `corpus` field, as `brain eval` applies it) and across
both corpora at once (the harder case: a user who does not say where the answer lives).

The corpora are read where they lie (`--root`), never copied. If `brain.chunking.chunk_text` does not yet
dispatch `.rst` files or strip YAML front matter, this script wires `brain.chunking.rst` and
`brain.chunking.frontmatter` in for the run only and says so on its first line.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import brain.ingest  # noqa: E402
from brain import BrainError  # noqa: E402
from brain.chunking import UnsupportedFile, chunk_text, read_text  # noqa: E402
from brain.chunking.frontmatter import apply_front_matter, front_matter_fields, split_front_matter  # noqa: E402
from brain.chunking.markdown import chunk_markdown  # noqa: E402
from brain.chunking.rst import chunk_rst  # noqa: E402
from brain.config import CorpusSpec, Settings  # noqa: E402
from brain.evaluate import evaluate, load_questions  # noqa: E402
from brain.search import MODES  # noqa: E402
from brain.service import Brain  # noqa: E402

DEFAULT_ROOT = Path("/work/shared/sample-corpora")
DEFAULT_QUESTIONS = [Path(__file__).resolve().parents[1] / "data" / "eval_sample_corpora.json",
                     Path(__file__).resolve().parents[1] / "data" / "eval_sample_corpora_b.json"]
CORPORA = ("kernelwiki", "cutedsl")


def _local_chunk_text(text: str, source: str, suffix: str):
    """What chunk_text does once the lead integrates rst and front matter (see the report)."""
    suffix = suffix.lower()
    if suffix == ".rst":
        return chunk_rst(text, source)
    if suffix in (".md", ".markdown", ".txt"):
        meta, body, consumed = split_front_matter(text)
        if consumed:
            fields = front_matter_fields(meta)
            chunks = chunk_markdown(body, source, title=fields["title"] or None, line_offset=consumed)
            return apply_front_matter(chunks, fields)
    return chunk_text(text, source, suffix)


def wire_locally() -> list[str]:
    """Route ingest through `_local_chunk_text` where the core lacks rst or front matter; returns what was wired."""
    wired = []
    try:
        chunk_text("Title\n=====\n\ntext\n", "probe.rst", ".rst")
    except UnsupportedFile:
        wired.append("rst")
    probe = chunk_text("---\ntitle: probe\n---\n\n# Probe\n\ntext\n", "probe.md", ".md")
    if any("title: probe" in c.text for c in probe):
        wired.append("front matter")
    if wired:
        brain.ingest.chunk_file = lambda path, source: _local_chunk_text(read_text(path), source, path.suffix)
        brain.ingest.SUPPORTED_SUFFIXES = tuple(set(brain.ingest.SUPPORTED_SUFFIXES) | {".rst"})
    return wired


def chunk_all(roots: dict[str, Path]) -> tuple[float, list[str]]:
    """Read and chunk every file without embedding or storing: (seconds, the texts ingest will embed)."""
    texts: list[str] = []
    t0 = time.perf_counter()
    for root in roots.values():
        for path, rel in brain.ingest.discover(CorpusSpec("timing", root))[0]:
            try:
                texts += [c.embedding_text() for c in brain.ingest.chunk_file(path, rel)]
            except UnsupportedFile:
                pass
    return time.perf_counter() - t0, texts


def table(title: str, report: dict) -> str:
    rows = [title, f"{'mode':<8} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'ndcg@10':>8} {'chars@5':>8} {'p50 ms':>7}"]
    for mode, r in report["modes"].items():
        rows.append(f"{mode:<8} {r['hit@1']:>6.3f} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} {r['ndcg@10']:>8.3f} "
                    f"{r['mean_chars@5']:>8.0f} {r['p50_ms']:>7.1f}")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="folder holding kernelwiki/ and cutedsl/")
    ap.add_argument("--questions", type=Path, nargs="+", default=DEFAULT_QUESTIONS)
    ap.add_argument("--split", choices=("tune", "report", "all"), default="report",
                    help="which fixed half of the questions (docs/evaluation.md: figures are quoted on report halves)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: bm25,dense,hybrid")
    ap.add_argument("--keep", type=Path, help="empty or new folder to build the index in and keep afterwards "
                                               "(default: a temporary one, deleted at the end)")
    args = ap.parse_args()
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        print(f"error: --keep {args.keep} is not empty; an existing index would make the ingest timing meaningless",
              file=sys.stderr)
        return 2

    roots = {name: args.root / name for name in CORPORA}
    missing = [str(p) for p in roots.values() if not p.is_dir()]
    if missing:
        print(f"error: sample corpus folder not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        questions = [q for file in args.questions for q in load_questions(file)
                     if args.split == "all" or q["split"] == args.split]
    except BrainError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    modes = tuple(m for m in args.modes.split(",") if m)
    if unknown := [m for m in modes if m not in MODES]:
        print(f"error: unknown mode {', '.join(unknown)} (choose from {', '.join(MODES)})", file=sys.stderr)
        return 2

    wired = wire_locally()
    print(f"chunkers: {'wired locally by this script: ' + ', '.join(wired) if wired else 'as integrated in brain'}")

    with tempfile.TemporaryDirectory(prefix="brain-sample-") as tmp:
        home = args.keep or Path(tmp)
        b = Brain(Settings(home=home))
        t0 = time.perf_counter()
        b.embedder.encode(["warm-up"])  # model load is a one-off cost, reported apart from ingest
        load_s = time.perf_counter() - t0
        chunk_s, texts = chunk_all(roots)
        t0 = time.perf_counter()
        b.embedder.encode(texts)  # the model alone on the same texts: the ceiling ingest is compared with
        raw_s = time.perf_counter() - t0

        specs = [CorpusSpec(name, root) for name, root in roots.items()]
        t0 = time.perf_counter()
        summary = b.ingest(specs)
        wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = b.ingest(specs)
        reingest_s = time.perf_counter() - t0

        chunks = b.chunks()
        mb = sum(p.stat().st_size for root in roots.values() for p in root.rglob("*") if p.is_file()) / 1e6
        lengths = [len(c["text"]) for c in chunks]
        print(f"model load: {load_s:.1f} s (not counted below)")
        print(f"ingest: {wall:.1f} s wall · {summary.files_seen} files ({mb:.2f} MB) · {len(chunks)} chunks · "
              f"{len(chunks) / wall:.1f} chunks/s · {summary.files_seen / wall:.1f} files/s · {mb / wall:.3f} MB/s")
        print(f"  raw encode of the same {len(texts)} texts: {raw_s:.1f} s = {len(texts) / raw_s:.1f} chunks/s; "
              f"ingest runs at {100 * raw_s / wall:.0f}% of it")
        print(f"  reading + chunking alone: {chunk_s:.2f} s")
        print(f"  re-ingest, nothing changed: {reingest_s:.2f} s ({again.chunks_embedded} chunks embedded)")
        print(f"  load average at the end (1/5/15 min): {' / '.join(f'{x:.1f}' for x in os.getloadavg())} "
              f"on {os.cpu_count()} cores: other work on the machine slows every figure above")
        print(f"chunk length: mean {statistics.mean(lengths):.0f} · median {statistics.median(lengths):.0f} · "
              f"max {max(lengths)} chars")
        for name, row in b.stats()["corpora"].items():
            print(f"  {name}: {row['files']} files, {row['chunks']} chunks")
        if summary.skipped:
            print(f"skipped: {'; '.join(summary.skipped)}")

        by_corpus = {c: sum(q.get("corpus") == c for q in questions) for c in CORPORA}
        print(f"\nquestions ({args.split} half): {len(questions)} "
              f"({', '.join(f'{c} {n}' for c, n in by_corpus.items())})")
        scoped = evaluate(b.searcher, questions, modes)
        print(table("each question searched within its corpus:", scoped))
        unscoped = evaluate(b.searcher, [{k: v for k, v in q.items() if k != "corpus"} for q in questions], modes)
        print(table("\nevery question searched across both corpora:", unscoped))
        for title, report in (("within corpus", scoped), ("across corpora", unscoped)):
            misses = report["modes"].get("hybrid", {}).get("misses@5", [])
            if misses:
                print(f"\nhybrid misses@5 ({title}):")
                for q in misses:
                    print(f"  - {q}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
