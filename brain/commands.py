"""The retrieval half of the `brain` command line: ingest, search, chunks, stats, patterns.

Every handler takes parsed args and a Settings, prints, and returns an exit code; errors are raised as
BrainError and printed as one line by the entry point.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

from brain import BrainError
from brain.config import CorpusSpec, Settings, default_corpora
from brain.ingest import Ingester
from brain.patterns import PATTERNS
from brain.search import Filters, Searcher
from brain.store import Store


def add_filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", help="lesson, failed-attempt, constraint, result, how-to, reference, code")
    p.add_argument("--tag", help="a tag or alias (tcgen05/UMMA, tma, tmem, s2t, pipeline, ...)")
    p.add_argument("--source", help="only sources whose path contains this text")
    p.add_argument("--language", help="markdown, python, rst")
    p.add_argument("--corpus", help="only this corpus")


def filters_from(args) -> Filters:
    return Filters(kind=args.kind, tag=args.tag, source=args.source, language=args.language, corpus=args.corpus)


def register(sub) -> None:
    p = sub.add_parser("ingest", help="chunk, embed and store corpora (incremental)")
    p.add_argument("paths", nargs="*", type=Path, help="folders or files (default: docs_corpus/ and kernels/)")
    p.add_argument("--corpus", help="corpus name for PATH (default: the folder's name)")
    p.add_argument("--include", action="append", default=[], help="glob of files to take (repeatable)")
    p.add_argument("--exclude", action="append", default=[], help="glob of files to leave out (repeatable)")
    p.add_argument("--remove", metavar="CORPUS", help="remove a corpus and all its chunks")
    p.add_argument("--rebuild", action="store_true", help="drop the index and ingest from scratch")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("search", help="hybrid search over the index")
    p.add_argument("query")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--mode", choices=("hybrid", "bm25", "dense"), default="hybrid")
    add_filter_args(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("chunks", help="every stored chunk with its metadata")
    p.add_argument("--source", help="only sources whose path contains this text")
    p.add_argument("--corpus")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_chunks)

    p = sub.add_parser("stats", help="what the index holds")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("patterns", help="kernel-code patterns and how many snippets carry each")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_patterns)


def specs_from(args, store: Store) -> list[CorpusSpec]:
    if not args.paths:
        return default_corpora()
    known = store.load_manifest().corpora
    specs = []
    for path in args.paths:
        root = path.resolve()
        if not root.exists():
            raise BrainError(f"path does not exist: {path}")
        name = args.corpus or next((n for n, c in known.items() if c["root"] == str(root)), None)
        name = name or (root.name if root.is_dir() else root.parent.name)
        specs.append(CorpusSpec(name, root, tuple(args.include), tuple(args.exclude)))
    if args.corpus and len(specs) > 1:
        raise BrainError("--corpus names one corpus: give one PATH with it")
    return specs


def cmd_ingest(args, settings: Settings) -> int:
    store = Store(settings)
    if args.rebuild:
        store.reset()
    ingester = Ingester(settings, store)
    if args.remove:
        summary = ingester.remove_corpus(args.remove)
    else:
        summary = ingester.run(specs_from(args, store), progress=sys.stderr.isatty() and not args.json)
    if args.json:
        print(json.dumps(summary.as_dict()))
        return 0
    for skip in summary.skipped:
        print(f"skipped {skip}", file=sys.stderr)
    print(summary.line())
    return 0


def search_payload(query: str, hits, took_ms: float) -> dict:
    return {"query": query, "took_ms": round(took_ms, 2), "results": [h.as_dict(r) for r, h in enumerate(hits, 1)]}


def print_hits(payload: dict) -> None:
    if not payload["results"]:
        print("no results")
    for r in payload["results"]:
        tags = ", ".join(r["tags"])
        print(f"{r['rank']}. {r['source']}:{r['start_line']}-{r['end_line']}  [{r['kind']}] {tags}")
        print(f"   {r['section']}")
        body = r["text"] if len(r["text"]) <= 600 else r["text"][:600] + " ..."
        print(textwrap.indent(body, "   | "))
        print()


def cmd_search(args, settings: Settings) -> int:
    searcher = Searcher(settings)
    t0 = time.perf_counter()
    hits = searcher.search(args.query, args.k, filters_from(args), mode=args.mode)
    payload = search_payload(args.query, hits, (time.perf_counter() - t0) * 1000)
    print(json.dumps(payload, ensure_ascii=False, indent=1)) if args.json else print_hits(payload)
    return 0


def chunk_records(store: Store, source: str | None = None, corpus: str | None = None) -> list[dict]:
    ids, texts, metas = store.records()
    out = []
    for i, text, m in zip(ids, texts, metas):
        if (source and source not in m["source"]) or (corpus and m["corpus"] != corpus):
            continue
        out.append({"id": i, "text": text, "source": m["source"], "start_line": m["start_line"],
                    "end_line": m["end_line"], "section": m["section"], "kind": m["kind"],
                    "tags": [t for t in m["tags"].split(",") if t], "language": m["language"],
                    "corpus": m["corpus"], "patterns": [p for p in m["patterns"].split(",") if p]})
    return out


def cmd_chunks(args, settings: Settings) -> int:
    rows = chunk_records(Store(settings), args.source, args.corpus)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print("no chunks" + (f" from sources matching '{args.source}'" if args.source else ""))
    for r in rows:
        print(f"{r['corpus']}/{r['source']}:{r['start_line']}-{r['end_line']}  [{r['kind']}] {r['section']}"
              f"  ({len(r['text'])} chars; tags: {', '.join(r['tags']) or '-'})")
    return 0


def stats(store: Store, settings: Settings) -> dict:
    m = store.load_manifest()
    _, texts, metas = store.records()
    corpora = {}
    for name, spec in sorted(m.corpora.items()):
        keys = [k for k in m.files if k.split(":", 1)[0] == name]
        corpora[name] = {"root": spec["root"], "files": len(keys),
                         "chunks": sum(len(m.files[k]["ids"]) for k in keys)}
    patterns = Counter(p for meta in metas for p in meta["patterns"].split(",") if p)
    return {"documents": len(m.files), "chunks": len(texts), "corpora": corpora,
            "kinds": dict(Counter(meta["kind"] for meta in metas).most_common()),
            "patterns": dict(sorted(patterns.items())), "model": m.model or settings.model,
            "index": settings.chroma_url or str(store.home), "generation": m.generation,
            "last_ingest": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m.last_ingest)) if m.last_ingest else None}


def cmd_stats(args, settings: Settings) -> int:
    st = stats(Store(settings), settings)
    if args.json:
        print(json.dumps(st, indent=1))
        return 0
    print(f"index: {st['index']}  (model {st['model']}, last ingest {st['last_ingest'] or 'never'})")
    print(f"documents: {st['documents']}  chunks: {st['chunks']}")
    for name, c in st["corpora"].items():
        print(f"  corpus {name}: {c['files']} files, {c['chunks']} chunks  ({c['root']})")
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in st["kinds"].items()))
    return 0


def pattern_table(store: Store) -> list[dict]:
    _, _, metas = store.records()
    counts = Counter(p for meta in metas for p in meta["patterns"].split(",") if p)
    rows = [{"pattern": name, "description": desc, "snippets": counts.get(name, 0)}
            for name, (desc, _) in PATTERNS.items()]
    rows += [{"pattern": name, "description": "(not a known pattern: check the marker's spelling)", "snippets": n}
             for name, n in counts.items() if name not in PATTERNS]
    return rows


def cmd_patterns(args, settings: Settings) -> int:
    rows = pattern_table(Store(settings))
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["pattern"]) for r in rows)
    for r in rows:
        print(f"{r['pattern']:<{width}}  {r['snippets']:>4}  {r['description']}")
    return 0
