"""Mine (query, passage, hard negative) triples from the commit messages of the allowed repositories (issue 28,
round 4 in docs/embedder.md), without an LLM, and add them to the documentation pairs of train/mine_pairs.py.

    python train/mine_commits.py --mirrors /work/.mirror --pairs /work/embedder-data/pairs.jsonl.gz \
        --out /work/embedder-data/r4

Why: the questions search misses most are worded as a user says them, not as the answering passage does. A
merged pull request's message holds both wordings of one change: the author's description in the field's words
and, in flashinfer-ai/flashinfer, a plain-language release-note summary that the CodeRabbit service wrote into
the pull request before it was squashed (public text of the repository; no model runs here).

Pair kinds (rules only):
  commit  the subject, its tags and "(#1234)" dropped ("fix(moe): ..." -> "...") -> the description: the body
          without templates, check lists, HTML comments, test plans, trailers and the release-note summary
  summary the first plain-language bullet of the summary's features / fixes / performance groups -> the subject
          and description
Left out: bodies under 25 words after cleaning, squashed branch logs (short `* ` items), subjects under 4 words, reverts and merges, forbidden
repositories, and a pair of which >= 50% of the passage's (or a 5-word-plus query's) 5-word shingles occur in the
evaluated corpora (mine_pairs.Evaluated, with the labelled worklog sets' folders added). Hard negatives as in mine_pairs.negatives, among the commit pairs.

Writes OUT/pairs.jsonl.gz (the documentation pairs of --pairs, then the commit pairs) and OUT/commits-stats.json.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from mine_pairs import ALLOWED, CUTLASS_MIRROR, EVALUATED_DIRS, FORBIDDEN, Evaluated, negatives, norm_hash, shingles
from pairs import squash

SUMMARY_START = re.compile(r"<!-- This is an auto-generated comment: release notes by coderabbit\.ai", re.I)
SUMMARY_GROUPS = re.compile(r"new features?|bug fix(es)?|performance|improvements?|enhancements?", re.I)
DROP_SECTION = re.compile(r"check ?list|pre-commit|related issues?|reviewer|^tests?$|^testing|test plan|how to test|"
                          r"release notes?|^todo|type of change|screenshots?", re.I)
DROP_LINE = re.compile(r"^\s*([-*] \[[ xX]\]|(signed-off-by|co-authored-by|reviewed-by|reviewers|subscribers|tasks|"
                       r"tags|differential revision|pull request resolved|ghstack-source-id|fixes|closes|"
                       r"resolves)\b)", re.I)
HEADING = re.compile(r"^#{1,6}\s+(.*)$|^([A-Z][A-Za-z ]{2,30}):\s*$")
TITLE_TAGS = re.compile(r"^(\s*(\[[^\]]*\]|[\w/-]+(\([^)]*\))?!?:))+\s*")
PR_NUMBER = re.compile(r"\s*\(#\d+\)\s*$")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
MAX_PASSAGE = 1200


def commits(git_dir: Path):
    """(sha, subject, body) of every commit reachable from HEAD."""
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--no-merges", "--format=%H%x01%s%x01%b%x02"],
                         capture_output=True, text=True, check=True, errors="replace").stdout
    for entry in out.split("\x02"):
        parts = entry.strip("\n").split("\x01")
        if len(parts) == 3:
            yield parts


def clean_subject(subject: str) -> str:
    return squash(TITLE_TAGS.sub("", PR_NUMBER.sub("", subject)))


def description(body: str) -> str:
    """The author's own text: template sections, check lists, trailers and the release-note summary removed."""
    body = SUMMARY_START.split(body)[0]
    body = HTML_COMMENT.sub("", body)
    keep, dropping = [], False
    for line in body.splitlines():
        h = HEADING.match(line)
        if h:
            title = re.sub(r"[^\w ]", "", h.group(1) or h.group(2)).strip()
            dropping = bool(DROP_SECTION.search(title))
            if title.lower() in ("summary", "description", "motivation", "details", "changes", "what does this pr do"):
                continue
        if dropping or DROP_LINE.match(line):
            continue
        keep.append(line)
    return "\n".join(keep).strip()


def summary_bullet(body: str) -> str | None:
    """The first bullet of the summary's features / fixes / performance groups, its wrapped lines joined."""
    parts = SUMMARY_START.split(body, maxsplit=1)
    if len(parts) < 2:
        return None
    lines = parts[1].splitlines()
    in_group = False
    for i, line in enumerate(lines):
        m = BULLET.match(line)
        text = (m.group(1) if m else line).strip()
        group = re.fullmatch(r"\*\*(.+?)\*\*:?", text)
        if group:
            in_group = bool(SUMMARY_GROUPS.fullmatch(group.group(1).strip()))
            continue
        if in_group and m:
            for nxt in lines[i + 1:]:
                if not nxt.strip() or BULLET.match(nxt) or nxt.lstrip().startswith("<!--"):
                    break
                text += " " + nxt.strip()
            if len(text.split()) >= 6:
                return squash(text)
    return None


def mine(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    t0 = time.time()
    ev = Evaluated()
    ev.load(EVALUATED_DIRS + args.evaluated, CUTLASS_MIRROR)
    stats = {"repos": {}, "evaluated_files": len(ev.names)}
    pairs = []
    for repo in args.repos:
        if repo.lower() in FORBIDDEN or repo not in ALLOWED:
            raise SystemExit(f"{repo}: not an allowed training source (see mine_pairs.ALLOWED / FORBIDDEN)")
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        rs = {"head": None, "commits": 0, "excluded": collections.Counter(), "pairs": collections.Counter()}
        stats["repos"][repo] = rs
        if not git_dir.exists():
            rs["excluded"]["mirror_missing"] = 1
            continue
        rs["head"] = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()
        for sha, subject, body in commits(git_dir):
            rs["commits"] += 1
            title = clean_subject(subject)
            if subject.lower().startswith(("revert", "merge")) or len(title.split()) < 4:
                rs["excluded"]["subject"] += 1
                continue
            desc = squash(description(body))
            if len(desc.split()) < 25:
                rs["excluded"]["short_body"] += 1
                continue
            items = desc.split("* ")
            if len(items) >= 4 and len(desc.split()) / len(items) < 6:  # a squashed branch's "* Saving..." log
                rs["excluded"]["squash_log"] += 1
                continue
            got = [("commit", title, desc[:MAX_PASSAGE])]
            bullet = summary_bullet(body)
            if bullet:
                got.append(("summary", bullet, f"{title}. {desc}"[:MAX_PASSAGE]))
            for kind, q, p in got:
                if ev.overlap(shingles(p)) >= args.passage_overlap or \
                        (len(q.split()) >= 5 and ev.overlap(shingles(q)) >= args.passage_overlap):
                    rs["excluded"]["pair_overlaps_evaluated"] += 1
                    continue
                pairs.append({"q": q, "p": p, "kind": kind, "repo": repo, "path": f"commit:{sha}"})
        print(f"{repo}: {rs['commits']} commits, excluded {dict(rs['excluded'])} ({time.time() - t0:.0f} s)",
              file=sys.stderr)
    seen_q, seen_p, uniq = set(), set(), []
    for r in pairs:
        kq, kp = (r["kind"], squash(r["q"]).lower()), (r["kind"], norm_hash(r["p"]))
        if kq not in seen_q and kp not in seen_p:
            seen_q.add(kq)
            seen_p.add(kp)
            uniq.append(r)
    negatives(uniq, args)
    for r in uniq:
        stats["repos"][r["repo"]]["pairs"][r["kind"]] += 1
    stats["pairs_by_kind"] = dict(collections.Counter(r["kind"] for r in uniq))
    stats["seconds"] = round(time.time() - t0)
    old = [json.loads(line) for line in gzip.open(args.pairs, "rt")] if args.pairs else []
    passages = {r["p"] for r in old}
    new = [r for r in uniq if r["p"] not in passages]  # pack.py names a passage by its line: passages stay unique
    rng.shuffle(new)
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out / "pairs.jsonl.gz", "wt") as f:
        for r in old + new:
            f.write(json.dumps(r) + "\n")
    (args.out / "commits-stats.json").write_text(json.dumps(stats, indent=1, default=dict))
    print(json.dumps({k: v for k, v in stats.items() if k != "repos"}), file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--pairs", type=Path, help="train/mine_pairs.py's pairs.jsonl.gz, written first in OUT")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repos", nargs="*", default=ALLOWED)
    ap.add_argument("--evaluated", type=Path, nargs="*", default=sorted(Path("/work").glob("extra-worklogs*")),
                    help="more evaluated folders to filter against (default: the labelled worklog sets' folders)")
    ap.add_argument("--passage-overlap", type=float, default=0.5)
    ap.add_argument("--neg-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    return mine(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
