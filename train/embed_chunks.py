"""Embed the evaluated chunk texts (train/fast_tune.py collect) with the base model and with interpolations
base + alpha * (fine-tuned - base) of trained overlays (weight-space ensembling, WiSE-FT), on the GPU.

    python train/embed_chunks.py --chunks train-data/chunks.json.xz --base train-data/base \
        --cand base --cand B2@0.3=$OUT/B2 --cand B2@1=$OUT/B2 --out $OUT/vectors.npz

A candidate is NAME or NAME@ALPHA=OVERLAY_DIR ("base" alone: the base weights). Computes what
sentence-transformers computes for this model (truncation at 256 tokens, mean pooling, L2 norm) in fp32 with
TF32 off; rows are stored as int8 with one fp32 scale per row (fast_tune.py rescales and renormalises), to
keep what comes back from the GPU machine small. The interpolation here and train/export.py --alpha give the
same weights (both from the fp16 overlay).
"""
from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F


def load_base(base: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file
    return {k: v.float() for k, v in load_file(str(base / "model.safetensors")).items() if v.is_floating_point()}


def load_overlay(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file
    out = {}
    for part in sorted(folder.glob("overlay-*.safetensors")):
        out.update({k: v.float() for k, v in load_file(str(part)).items()})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=Path, required=True)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--cand", action="append", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertModel

    with lzma.open(args.chunks, "rt") as f:
        table = json.load(f)
    keys = sorted(table)
    tok = Tokenizer.from_file(str(args.base / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=256)
    ids = [e.ids for e in tok.encode_batch([table[k] for k in keys])]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    base = load_base(args.base)
    model = BertModel(BertConfig.from_pretrained(str(args.base)), add_pooling_layer=False).to(args.device).eval()
    out = {"keys": np.array(keys)}
    for cand in args.cand:
        t0 = time.time()
        name, _, src = cand.partition("=")
        alpha = float(name.split("@")[1]) if "@" in name else 0.0
        state = dict(base)
        if src:
            for k, v in load_overlay(Path(src)).items():
                state[k] = base[k] + alpha * (v - base[k])
        model.load_state_dict({k: v for k, v in state.items() if not k.startswith("pooler.")}, strict=False)
        vecs = np.zeros((len(keys), 384), np.float32)
        with torch.no_grad():
            for b in range(0, len(order), args.batch):
                part = order[b:b + args.batch]
                n = max(len(ids[i]) for i in part)
                x = torch.zeros(len(part), n, dtype=torch.long)
                m = torch.zeros(len(part), n, dtype=torch.long)
                for j, i in enumerate(part):
                    x[j, :len(ids[i])] = torch.tensor(ids[i])
                    m[j, :len(ids[i])] = 1
                x, m = x.to(args.device), m.to(args.device)
                h = model(input_ids=x, attention_mask=m).last_hidden_state
                mf = m.unsqueeze(-1).float()
                v = F.normalize((h * mf).sum(1) / mf.sum(1).clamp(min=1e-9), dim=-1)
                vecs[part] = v.cpu().numpy()
        scale = np.abs(vecs).max(1, keepdims=True) / 127.0
        out[name] = np.round(vecs / scale).astype(np.int8)
        out[name + "#scale"] = scale.astype(np.float32)
        print(f"{name}: {len(keys)} chunks, {time.time() - t0:.1f} s", file=sys.stderr)
    np.savez(args.out, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
