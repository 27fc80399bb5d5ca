"""Mine (query, passage, hard negative) triples from public kernel repositories, without an LLM (issue 28).

    python train/mine_pairs.py --mirrors /work/.mirror --out /work/embedder-data [--seed 0]

Sources: the bare git mirrors that the `fetch` tool brings (/work/.mirror/OWNER+NAME/repo), read at their HEAD
commit with `git ls-tree` / `git cat-file` (no work tree, nothing fetched at run time). Only the repositories in
ALLOWED are read; FORBIDDEN ones are refused even if asked for. A repository whose mirror is missing is noted in
stats.json and skipped.

Pair kinds (each a rule, no model in the loop):
  heading   markdown / rst heading path ("doc title / section / subsection") -> the section's text
  question  a question-shaped heading ("How do I ...?", "Why ...") -> its section, the answer
  ict       inverse cloze: one sentence of a prose section -> the section without that sentence (kept 10%)
  doc2code  a Python docstring's first paragraph -> the def/class without its docstring
  comment   a comment block (//, /* */, #) -> the code right after it (without the comment)
  ident     an identifier split into words (flash_attn_varlen_fwd, splitKVCombine) -> its definition

Exclusions, enforced here (see docs/embedder.md):
  - never a file of a corpus the project evaluates on (EVALUATED: docs_corpus/, kernels/, /work/shared, the CUB
    headers, the CUTLASS notebooks and C++ docs): these are read only to build the similarity filter;
  - no file of NVIDIA/cutlass, NVIDIA/cccl, Dao-AILab/quack, mit-han-lab/KernelWiki (FORBIDDEN);
  - no CuTe DSL Python file (a .py that imports `cutlass`) from any repository;
  - no vendored third-party folders (3rdparty/, third_party/, ...), which may hold copies of the above;
  - a file whose whitespace-normalised text hashes equal to an evaluated file, or whose 5-word shingle set has
    Jaccard >= --jaccard (0.5) with any evaluated file, or is >= --contain (0.8) contained in one / contains one;
  - a mined passage or query of which >= --passage-overlap (0.5) of its 5-word shingles occur anywhere in the
    evaluated corpora.
Hard negatives: bm25 (bm25s + PyStemmer) over all mined passages; per query, the best-ranked passage that is
not its positive, not from the same file, and shares < 60% of its word set with the positive.

Writes OUT/pairs.jsonl.gz ({q, p, n, kind, repo, path}), OUT/stats.json (commits, counts, dedupe figures),
OUT/removed.tsv (each file left out by the near-copy check, with its evaluated twin and score).
"""
from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from pairs import c_pairs, doc_pairs, py_pairs, squash  # train/pairs.py, beside this script

ROOT = Path(__file__).resolve().parents[1]

ALLOWED = ["triton-lang/triton", "Dao-AILab/flash-attention", "flashinfer-ai/flashinfer",
           "HazyResearch/ThunderKittens", "vllm-project/vllm", "sgl-project/sglang", "pytorch/ao",
           "NVIDIA/TransformerEngine", "NVIDIA/cuda-samples", "deepseek-ai/DeepEP", "ROCm/composable_kernel",
           "linkedin/Liger-Kernel"]
FORBIDDEN = {"nvidia/cutlass", "nvidia/cccl", "dao-ailab/quack", "mit-han-lab/kernelwiki"}

# every corpus the project evaluates on (bench/retrieval/eval_all.py); read only to filter against
EVALUATED_DIRS = [ROOT / "docs_corpus", ROOT / "kernels", Path("/work/main/docs_corpus"), Path("/work/main/kernels"),
                  Path("/work/shared"), Path("/usr/local/cuda-13.0/include/cccl/cub")]
CUTLASS_MIRROR = Path("/work/.mirror/NVIDIA+cutlass/repo")
CUTLASS_EVALUATED = re.compile(r"^(examples/python/CuTeDSL/.*\.ipynb|operators/examples/[^/]*\.ipynb|media/docs/cpp/.*)$")

TEXT_EXT = {".md", ".rst", ".py", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".inl", ".hip"}
C_EXT = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".cxx", ".inl", ".hip"}
VENDORED = re.compile(r"(^|/)(3rdparty|third_party|thirdparty|third-party|external|extern|vendor|_vendor|"
                      r"submodules?|deps)(/|$)", re.I)
IMPORTS_CUTLASS = re.compile(r"^\s*(import\s+cutlass\b|from\s+cutlass\b)", re.M)
MAX_FILE = 300_000
PER_FILE = 40

WORD = re.compile(r"[a-z0-9_]+")


# ----------------------------------------------------------------------------------------------- similarity
def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shingles(text: str, k: int = 5) -> set[int]:
    w = words(text)
    if len(w) < k:
        return {hash(" ".join(w))} if w else set()
    return {hash(" ".join(w[i:i + k])) for i in range(len(w) - k + 1)}


def norm_hash(text: str) -> str:
    return hashlib.sha1(" ".join(text.split()).encode()).hexdigest()


def notebook_text(raw: str) -> str:
    try:
        nb = json.loads(raw)
        return "\n\n".join("".join(c.get("source", "")) for c in nb.get("cells", []))
    except (ValueError, AttributeError):
        return raw


class Evaluated:
    """Every evaluated file: exact hashes, 5-shingle sets, and an inverted index shingle -> files."""

    def __init__(self):
        self.names: list[str] = []
        self.sizes: list[int] = []
        self.hashes: dict[str, str] = {}
        self.index: dict[int, list[int]] = collections.defaultdict(list)

    def add(self, name: str, text: str) -> None:
        if name.endswith(".ipynb"):
            text = notebook_text(text)
        sh = shingles(text)
        if not sh:
            return
        i = len(self.names)
        self.names.append(name)
        self.sizes.append(len(sh))
        self.hashes.setdefault(norm_hash(text), name)
        for s in sh:
            self.index[s].append(i)

    def load(self, dirs: list[Path], cutlass: Path) -> None:
        seen = set()
        for d in dirs:
            if not d.exists():
                continue
            for f in sorted(d.rglob("*")):
                if f.is_file() and f.stat().st_size < 2_000_000:
                    real = f.resolve()
                    if real in seen:
                        continue
                    seen.add(real)
                    try:
                        self.add(str(f), f.read_text(errors="replace"))
                    except OSError:
                        pass
        if cutlass.exists():
            for path, _size, sha in ls_tree(cutlass):
                if CUTLASS_EVALUATED.match(path):
                    text = git_show(cutlass, sha)
                    if text is not None:
                        self.add(f"cutlass:{path}", text)

    def nearest(self, sh: set[int]) -> tuple[float, float, float, int]:
        """(best Jaccard, best containment of the candidate in one file, best containment of one file in the
        candidate, that file's index) over all evaluated files sharing a shingle."""
        counts: collections.Counter = collections.Counter()
        for s in sh:
            for i in self.index.get(s, ()):
                counts[i] += 1
        best = (0.0, 0.0, 0.0, -1)
        for i, inter in counts.items():
            jac = inter / (len(sh) + self.sizes[i] - inter)
            c_in = inter / len(sh)
            c_of = inter / self.sizes[i]
            if max(jac, c_in, c_of) > max(best[:3]):
                best = (jac, c_in, c_of, i)
        return best

    def overlap(self, sh: set[int]) -> float:
        """Share of these shingles found anywhere in the evaluated corpora."""
        return sum(1 for s in sh if s in self.index) / len(sh) if sh else 0.0


# ------------------------------------------------------------------------------------------------------ git
def ls_tree(git_dir: Path) -> list[tuple[str, int, str]]:
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-l", "HEAD"], capture_output=True,
                         text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, sha, size = meta.split()
        if kind == "blob" and size.isdigit():  # 'BAD': a blob the snapshot lacks
            rows.append((path, int(size), sha))
    return rows


def git_show(git_dir: Path, sha: str) -> str | None:
    r = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob", sha], capture_output=True)
    if r.returncode != 0:
        return None  # a blob the snapshot lacks (files of 4 MiB and more)
    return r.stdout.decode("utf-8", errors="replace")


def read_blobs(git_dir: Path, shas: list[str]):
    """Yield (sha, text or None) through one `git cat-file --batch`."""
    p = subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    for sha in shas:
        p.stdin.write(sha.encode() + b"\n")
        p.stdin.flush()
        header = p.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            yield sha, None
            continue
        size = int(header[2])
        data = p.stdout.read(size)
        p.stdout.read(1)
        yield sha, data.decode("utf-8", errors="replace")
    p.stdin.close()
    p.wait()


# ------------------------------------------------------------------------------------------------------ main
def mine(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    t0 = time.time()
    ev = Evaluated()
    ev.load(EVALUATED_DIRS, CUTLASS_MIRROR)
    print(f"evaluated corpora: {len(ev.names)} files, {len(ev.index):,} distinct 5-shingles "
          f"({time.time() - t0:.0f} s)", file=sys.stderr)
    stats = {"evaluated_files": len(ev.names), "thresholds": {"jaccard": args.jaccard, "contain": args.contain,
             "passage_overlap": args.passage_overlap, "shingle_words": 5}, "repos": {}}
    removed_rows = ["repo\tpath\treason\tjaccard\tcontained_in\tcontains\tevaluated_file"]
    pairs: list[dict] = []
    for repo in args.repos:
        if repo.lower() in FORBIDDEN or repo not in ALLOWED:
            raise SystemExit(f"{repo}: not an allowed training source (see ALLOWED / FORBIDDEN)")
        git_dir = args.mirrors / repo.replace("/", "+") / "repo"
        rs = {"commit": None, "files_seen": 0, "files_used": 0, "excluded": collections.Counter(),
              "pairs": collections.Counter()}
        stats["repos"][repo] = rs
        if not git_dir.exists():
            rs["excluded"]["mirror_missing"] = 1
            print(f"{repo}: no mirror at {git_dir}, skipped", file=sys.stderr)
            continue
        rs["commit"] = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True,
                                      text=True, check=True).stdout.strip()
        files = []
        for path, size, sha in ls_tree(git_dir):
            ext = Path(path).suffix.lower()
            if ext not in TEXT_EXT:
                continue
            rs["files_seen"] += 1
            if VENDORED.search(path):
                rs["excluded"]["vendored_dir"] += 1
            elif size > MAX_FILE or size < 200:
                rs["excluded"]["size"] += 1
            else:
                files.append((path, sha))
        # one blob per listed path, in ls-tree order (a blob at several paths is read once per path: its pairs
        # are equal and go in the de-duplication below)
        for (path, _sha), (_, text) in zip(files, read_blobs(git_dir, [s for _, s in files])):
            ext = Path(path).suffix.lower()
            if text is None:
                rs["excluded"]["blob_missing"] += 1
                continue
            if ext == ".py" and IMPORTS_CUTLASS.search(text):
                rs["excluded"]["cute_dsl_python"] += 1
                continue
            if norm_hash(text) in ev.hashes:
                rs["excluded"]["exact_copy_of_evaluated"] += 1
                removed_rows.append(f"{repo}\t{path}\thash\t1\t1\t1\t{ev.hashes[norm_hash(text)]}")
                continue
            sh = shingles(text)
            jac, c_in, c_of, i = ev.nearest(sh)
            if jac >= args.jaccard or c_in >= args.contain or c_of >= args.contain:
                rs["excluded"]["near_copy_of_evaluated"] += 1
                removed_rows.append(f"{repo}\t{path}\tminhash\t{jac:.3f}\t{c_in:.3f}\t{c_of:.3f}\t{ev.names[i]}")
                continue
            if ext in (".md", ".rst"):
                got = doc_pairs(text, ext, Path(path).stem.replace("_", " ").replace("-", " "), rng)
            elif ext == ".py":
                got = py_pairs(text)
            else:
                got = c_pairs(text)
            if len(got) > PER_FILE:
                got = rng.sample(got, PER_FILE)
            kept = 0
            for kind, q, p in got:
                if ev.overlap(shingles(p)) >= args.passage_overlap or \
                        (len(q.split()) >= 5 and ev.overlap(shingles(q)) >= args.passage_overlap):
                    rs["excluded"]["pair_overlaps_evaluated"] += 1
                    continue
                pairs.append({"q": q, "p": p, "kind": kind, "repo": repo, "path": path})
                kept += 1
            rs["files_used"] += kept > 0
        print(f"{repo} @ {rs['commit'][:12]}: {rs['files_used']}/{rs['files_seen']} files, "
              f"excluded {dict(rs['excluded'])} ({time.time() - t0:.0f} s)", file=sys.stderr)

    # de-duplicate: one pair per normalised query, one per passage; then cap each (repo, kind)
    seen_q, seen_p, uniq = set(), set(), []
    rng.shuffle(pairs)
    for r in pairs:
        kq, kp = squash(r["q"]).lower(), norm_hash(r["p"])
        if kq in seen_q or kp in seen_p:
            continue
        seen_q.add(kq)
        seen_p.add(kp)
        uniq.append(r)
    stats["pairs_before_dedupe"] = len(pairs)
    per = collections.defaultdict(list)
    for r in uniq:
        per[(r["repo"], r["kind"])].append(r)
    pairs = [r for rows in per.values() for r in rows[:args.cap]]
    stats["pairs_after_dedupe_and_cap"] = len(pairs)

    negatives(pairs, args)
    for r in pairs:
        stats["repos"][r["repo"]]["pairs"][r["kind"]] += 1
    stats["pairs_by_kind"] = dict(collections.Counter(r["kind"] for r in pairs))
    stats["pairs_with_negative"] = sum(1 for r in pairs if r.get("n"))
    stats["seconds"] = round(time.time() - t0)
    args.out.mkdir(parents=True, exist_ok=True)
    rng.shuffle(pairs)
    with gzip.open(args.out / "pairs.jsonl.gz", "wt") as f:
        for r in pairs:
            f.write(json.dumps(r) + "\n")
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1, default=dict))
    (args.out / "removed.tsv").write_text("\n".join(removed_rows) + "\n")
    print(json.dumps({k: v for k, v in stats.items() if k != "repos"}, indent=1), file=sys.stderr)
    return 0


def negatives(pairs: list[dict], args: argparse.Namespace) -> None:
    """bm25 hard negative per pair: best-ranked passage that is not the positive, from another file, and shares
    < 60% of its word set with the positive."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus = [r["p"] for r in pairs]
    t0 = time.time()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    wsets = [set(words(p)) for p in corpus]
    q_tok = bm25s.tokenize([r["q"] for r in pairs], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, _scores = retriever.retrieve(q_tok, k=args.neg_k, show_progress=False, n_threads=args.threads)
    for i, r in enumerate(pairs):
        for j in docs[i]:
            j = int(j)
            if j == i or (pairs[j]["repo"], pairs[j]["path"]) == (r["repo"], r["path"]):
                continue
            a, b = wsets[i], wsets[j]
            if len(a & b) / max(1, len(a | b)) >= 0.6:
                continue
            r["n"] = pairs[j]["p"]
            break
    print(f"hard negatives: {sum(1 for r in pairs if r.get('n'))}/{len(pairs)} ({time.time() - t0:.0f} s)",
          file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--out", type=Path, default=Path("/work/embedder-data"))
    ap.add_argument("--repos", nargs="*", default=ALLOWED)
    ap.add_argument("--jaccard", type=float, default=0.5)
    ap.add_argument("--contain", type=float, default=0.8)
    ap.add_argument("--passage-overlap", type=float, default=0.5)
    ap.add_argument("--cap", type=int, default=15000, help="most pairs per (repository, kind)")
    ap.add_argument("--neg-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    return mine(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
