"""`brain ingest`, `watch`, `search`, `pitfalls`, `snippets`, `context`, `sources`, `eval`, `chunks`, `stats`,
`patterns`.

Every handler takes parsed args and a Settings, prints, and returns an exit code; errors are raised as
BrainError and printed as one line by the entry point (cli/main.py). While a `brain serve` of the same home
runs, writes and ranked reads go through it (cli/remote.py); the index's modules are imported only by the
handlers that open it, so a command answered by the server starts fast.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from brain import BrainError
from brain.config import CorpusSpec, Settings, default_corpora
from cli.args import add_filter_args, add_k, add_output_args, add_text, filter_values, filters_from, text_of
from cli.output import print_hits, printable
from cli.remote import find_server, note

if TYPE_CHECKING:
    from brain.service import Brain


def register(sub) -> None:
    p = sub.add_parser("ingest", help="chunk, embed and store corpora (incremental)")
    p.add_argument("paths", nargs="*", type=Path, help="folders or files (default: docs_corpus/ and kernels/)")
    p.add_argument("--corpus", help="corpus name for PATH (default: the folder's name)")
    p.add_argument("--include", action="append", default=[], help="glob of files to take (repeatable)")
    p.add_argument("--exclude", action="append", default=[], help="glob of files to leave out (repeatable)")
    p.add_argument("--remove", metavar="CORPUS", help="remove a corpus and all its chunks")
    p.add_argument("--rebuild", action="store_true", help="drop the index and ingest from scratch")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr (otherwise: a line rewritten in place on a "
                   "terminal, a line every few seconds of a long ingest in a log or a pipe)")
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("watch", help="keep the index fresh: re-ingest changed, added and deleted files as they change")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between scans (default 0.5)")
    p.set_defaults(handler=cmd_watch)

    p = sub.add_parser("search", help="hybrid search over the index")
    add_text(p, "query", "the question")
    add_k(p, 5)
    p.add_argument("--mode", choices=("hybrid", "bm25", "dense"), default="hybrid")
    p.add_argument("--expand", action="store_true", help="append the next chunk of the section to very short hits")
    add_filter_args(p)
    add_output_args(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("pitfalls", aliases=["pitfall"],
                       help="paste an error message or traceback; get the rule that explains it")
    add_text(p, "error", "the error text")
    add_k(p, 3)
    add_filter_args(p)
    add_output_args(p)
    p.set_defaults(handler=cmd_pitfall)

    p = sub.add_parser("snippets", help="code regions of the reference kernels that carry a pattern")
    p.add_argument("pattern", help="e.g. s2t-copy, tma-load, pipeline-setup (see `brain patterns`)")
    add_text(p, "query", "optional: rank the snippets by this question", required=False)
    add_k(p, 5)
    add_filter_args(p)
    add_output_args(p)
    p.set_defaults(handler=cmd_snippets)

    p = sub.add_parser("context", help="the best passages for a question, packed into one cited text (as GET /context)")
    add_text(p, "query", "the question")
    p.add_argument("--budget", type=int, default=2000, help="upper bound on the text's tokens (default 2000)")
    add_k(p, 10, "passages considered")
    add_filter_args(p)
    add_output_args(p, full=False)
    p.set_defaults(handler=cmd_context)

    p = sub.add_parser("sources", help="list the ingested files, or print lines of one (as GET /sources)")
    p.add_argument("path", nargs="?", help="corpus/source as cited (e.g. docs_corpus/000_x.txt); none: list them")
    p.add_argument("--lines", metavar="START-END", help="only these lines (1-based, inclusive)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_sources)

    p = sub.add_parser("eval", help="retrieval quality on question files: hit@1, hit@5, MRR@10, nDCG@10")
    p.add_argument("file", type=Path, nargs="+", help='JSON lists of {"q": ..., "any": [needle, ...]}')
    p.add_argument("--split", choices=("tune", "report", "all"), default="all",
                   help="which fixed half of each file (tune: for choosing parameters; report: for quoting)")
    p.add_argument("--mode", choices=("hybrid", "bm25", "dense"), help="only this mode")
    p.add_argument("--corpus", help="only search this corpus")
    p.add_argument("--json", action="store_true")
    p.add_argument("--show-misses", action="store_true", help="list questions with no relevant result in the top 5")
    p.set_defaults(handler=cmd_eval)

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


def specs_from(args, brain: Brain, max_bytes: int) -> list[CorpusSpec]:
    from brain.chunking import SUPPORTED_SUFFIXES
    from brain.ingest import discover
    if not args.paths:
        return default_corpora()
    known = brain.manifest().corpora
    specs = []
    for path in args.paths:
        root = path.resolve()
        if not root.exists():
            raise BrainError(f"path does not exist: {path}")
        name = args.corpus or next((n for n, c in known.items() if c["root"] == str(root)), None)
        name = name or (root.name if root.is_dir() else root.parent.name)
        spec = CorpusSpec(name, root, tuple(args.include), tuple(args.exclude))
        files, skipped = discover(spec, max_bytes)
        if not files:
            raise BrainError(f"nothing to ingest under {path}: " + ("; ".join(skipped[:3]) if skipped else
                             f"no {', '.join(SUPPORTED_SUFFIXES)} files (after --include/--exclude)"))
        specs.append(spec)
    if args.corpus and len(specs) > 1:
        raise BrainError("--corpus names one corpus: give one PATH with it")
    return specs


def open_index(settings: Settings) -> Brain:
    """A Brain over an index that exists: a read never creates an empty index (nor its folder)."""
    from brain.service import Brain
    brain = Brain(settings)
    if brain.generation() == 0:
        where = f"{settings.chroma_url} (index {settings.index})" if settings.chroma_url else str(settings.home)
        raise BrainError(f"no index at {where}: run brain ingest")
    return brain


def cmd_ingest(args, settings: Settings) -> int:
    from brain.ingest import Summary
    from brain.service import Brain
    from brain.watch import unchanged
    server = find_server(settings)
    brain = Brain(settings)  # the manifest and the files: no Chroma unless this process writes
    if args.rebuild:
        if server:
            raise BrainError(f"{server} serves this index: stop it before `brain ingest --rebuild`")
        brain.rebuild()
    if args.remove:
        if server:
            note(server, f"removing corpus '{args.remove}'")
        summary = Summary.of(server.remove_corpus(args.remove)) if server else brain.remove_corpus(args.remove)
    else:
        specs = specs_from(args, brain, settings.max_file_bytes)
        # nothing changed by size and mtime: answer without opening Chroma or loading the model
        summary = None if args.rebuild else unchanged(brain.manifest(), specs, settings.max_file_bytes)
        if summary is None and server:
            note(server, "ingesting")
            summary = Summary.of(server.ingest(specs))
        elif summary is None:
            summary = brain.ingest(specs, progress=not args.quiet)
            brain.snapshot()  # the snapshot file the next CLI read loads (no Chroma, no torch)
    if args.json:
        print(json.dumps(summary.as_dict()))
        return 0
    for skip in summary.skipped:
        print(f"skipped {printable(skip)}", file=sys.stderr)
    print(summary.line())
    return 0


def cmd_watch(args, settings: Settings) -> int:
    from brain.service import Brain
    from brain.watch import Watcher
    server = find_server(settings)
    if server:
        raise BrainError(f"{server} serves this index: watch through it (`brain serve --watch`) instead")
    brain = Brain(settings)
    brain.claim("brain watch")  # the index's one writer while it watches
    roots = ", ".join(str(s.root) for s in brain.indexed_corpora()) or "no corpus yet (brain ingest PATH adds one)"
    print(f"watching {roots} (index {settings.home}); Ctrl-C stops", file=sys.stderr, flush=True)
    Watcher(brain.ingest, brain.indexed_corpora, warm=brain.warm_writer, interval=args.interval,
            max_bytes=settings.max_file_bytes).run()
    return 0


def cmd_search(args, settings: Settings) -> int:
    query, server = text_of(args.query), find_server(settings)
    payload = server.search(query, args.k, filter_values(args), args.mode, args.expand) if server else \
        open_index(settings).search(query, args.k, filters_from(args), mode=args.mode, expand=args.expand)
    print(json.dumps(payload, ensure_ascii=False, indent=1)) if args.json else print_hits(payload, args.full)
    return 0


def cmd_pitfall(args, settings: Settings) -> int:
    error, server = text_of(args.error), find_server(settings)
    payload = server.pitfall(error, args.k, filter_values(args)) if server else \
        open_index(settings).pitfall(error, args.k, filters_from(args))
    print(json.dumps(payload, ensure_ascii=False, indent=1)) if args.json else print_hits(payload, args.full)
    return 0


def cmd_context(args, settings: Settings) -> int:
    from brain.context import build_context, check_budget
    check_budget(args.budget)
    query, server = text_of(args.query), find_server(settings)
    out = server.context(query, args.budget, args.k, filter_values(args)) if server else \
        build_context(open_index(settings).search(query, args.k, filters_from(args)), args.budget)
    print(json.dumps(out, ensure_ascii=False, indent=1) if args.json else out["text"])
    return 0


def _line_range(text: str | None) -> tuple[int | None, int | None]:
    if not text:
        return None, None
    start, _, end = text.partition("-")
    try:
        return int(start), int(end) if end else int(start)
    except ValueError:
        raise BrainError(f"--lines takes START-END (1-based line numbers), not '{text}'") from None


def cmd_sources(args, settings: Settings) -> int:
    brain = open_index(settings)
    if not args.path:
        rows = brain.sources()
        print(json.dumps(rows, indent=1) if args.json else "\n".join(f"{r['path']}  ({r['chunks']} chunks)"
                                                                      for r in rows) or "no sources")
        return 0
    out = brain.read_source(args.path, *_line_range(args.lines))
    print(json.dumps(out, ensure_ascii=False, indent=1) if args.json else out["text"])
    return 0


def cmd_snippets(args, settings: Settings) -> int:
    query, server = text_of(args.query), find_server(settings)
    payload = server.snippets(args.pattern, query, args.k, filter_values(args)) if server else \
        open_index(settings).snippets(args.pattern, query, args.k, filters_from(args))
    print(json.dumps(payload, ensure_ascii=False, indent=1)) if args.json else print_hits(payload, args.full)
    return 0


def cmd_eval(args, settings: Settings) -> int:
    from brain.evaluate import evaluate, load_questions
    from brain.search import MODES
    sets = [(file, load_questions(file)) for file in args.file]  # every file checked before any search
    searcher = open_index(settings).searcher
    reports = {str(file): evaluate(searcher, questions, (args.mode,) if args.mode else MODES, args.corpus,
                                   split=args.split) for file, questions in sets}
    if args.json:
        for report in reports.values():
            for row in report["modes"].values():
                row.pop("misses@5")
                row.pop("reciprocal_ranks")
        print(json.dumps(reports[str(args.file[0])] if len(reports) == 1 else reports))
        return 0
    for file, report in reports.items():
        print(f"{file}: {report['n']} questions (split {report['split']})")
        print(f"{'mode':<8} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'ndcg@10':>8} {'p50 ms':>7} {'chars@5':>8}")
        for mode, r in report["modes"].items():
            print(f"{mode:<8} {r['hit@1']:>6.3f} {r['hit@5']:>6.3f} {r['mrr@10']:>7.3f} {r['ndcg@10']:>8.3f} "
                  f"{r['p50_ms']:>7.1f} {r['mean_chars@5']:>8.0f}")
            for t, row in r["by_type"].items():
                print(f"    {t:<12} n={row['n']:<3} hit@1 {row['hit@1']:.3f}  hit@5 {row['hit@5']:.3f}  "
                      f"mrr@10 {row['mrr@10']:.3f}")
            if args.show_misses:
                for q in r["misses@5"]:
                    print(f"    miss: {q}")
        print()
    return 0


def cmd_chunks(args, settings: Settings) -> int:
    rows = open_index(settings).chunks(args.source, args.corpus)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print("no chunks" + (f" from sources matching '{args.source}'" if args.source else ""))
    for r in rows:
        print(f"{r['corpus']}/{r['source']}:{r['start_line']}-{r['end_line']}  [{r['kind']}] {r['section']}"
              f"  ({len(r['text'])} chars; tags: {', '.join(r['tags']) or '-'})")
    return 0


def cmd_stats(args, settings: Settings) -> int:
    st = open_index(settings).stats(paths=True)
    if args.json:
        print(json.dumps(st, indent=1))
        return 0
    print(f"index: {st['index']} at {st['location']}  (model {st['model']}, last ingest {st['last_ingest'] or 'never'})")
    print(f"documents: {st['documents']}  chunks: {st['chunks']}")
    for name, c in st["corpora"].items():
        print(f"  corpus {name}: {c['files']} files, {c['chunks']} chunks  ({c['root']})")
    print("kinds: " + ", ".join(f"{k} {n}" for k, n in st["kinds"].items()))
    return 0


def cmd_patterns(args, settings: Settings) -> int:
    rows = open_index(settings).patterns()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    width = max(len(r["pattern"]) for r in rows)
    for r in rows:
        print(f"{r['pattern']:<{width}}  {r['snippets']:>4}  {r['description']}")
        if r["rule"]:
            print(f"{'':<{width}}        rule: {r['rule']}")
        if r["c_rule"]:
            print(f"{'':<{width}}        C/C++/CUDA: {r['c_rule']}")
    return 0
