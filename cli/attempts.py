"""`brain attempts`, `brain conflicts`, `brain record` (through a running `brain serve` of the home, if any)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from brain import BrainError
from brain.config import Settings
from cli.args import add_k, add_text, text_of
from cli.index import open_index
from cli.output import print_record
from cli.remote import find_server


def register(sub) -> None:
    p = sub.add_parser("attempts", help="attempt records: what was tried, what it measured, what it concluded")
    add_text(p, "query", "rank the records by this question (default: all, in file order)", required=False)
    p.add_argument("--technique", help="a technique tag or alias (pipeline, tma, split-k, ...)")
    p.add_argument("--verdict", help="improved, regressed, neutral, failed, proposed, inconclusive")
    p.add_argument("--problem", help="gemv, gemm, dual_gemm, group_gemm, none")
    p.add_argument("--corpus", help="only this corpus")
    p.add_argument("--include-superseded", action="store_true", help="also records a later one supersedes")
    add_k(p, 10, "records")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_attempts)

    p = sub.add_parser("conflicts", help="attempt records on one technique whose verdicts or lessons disagree")
    p.add_argument("--technique", help="only this technique")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_conflicts)

    p = sub.add_parser("record", help="write an attempt record (JSON) into the records worklog and index it")
    p.add_argument("file", help="a JSON file with the record's fields, or '-' for stdin")
    p.add_argument("--to", dest="target", metavar="NAME.md", help="append to this records file (default: a file of its own per record)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_record)


def cmd_attempts(args, settings: Settings) -> int:
    query, server = text_of(args.query), find_server(settings)
    payload = (server or open_index(settings)).find_attempts(query, args.technique, args.verdict, args.problem,
                                                             args.include_superseded, args.k, args.corpus)
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=1))
        return 0
    if not payload["results"]:
        print("no attempt records match")
    for n, r in enumerate(payload["results"], 1):
        print_record(r, n)
    return 0


def cmd_conflicts(args, settings: Settings) -> int:
    payload = (find_server(settings) or open_index(settings)).attempt_conflicts(args.technique)
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=1))
        return 0
    if not payload["conflicts"]:
        print("no conflicting records")
    for c in payload["conflicts"]:
        print(f"== {c['why']}")
        print_record(c["a"])
        print_record(c["b"])
    return 0


def cmd_record(args, settings: Settings) -> int:
    try:
        raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BrainError(f"cannot read {args.file}: {getattr(e, 'strerror', None) or e}") from None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise BrainError(f"{args.file} is not JSON: {e.msg} at line {e.lineno}") from None
    out = (find_server(settings) or open_index(settings)).record(obj, args.target)
    print(json.dumps(out) if args.json else f"recorded {out['id']} at {out['corpus']}/{out['source']}:"
          f"{out['start_line']}-{out['end_line']}")
    return 0
