"""A generated markdown corpus of any size, built from the shipped worklogs' own paragraphs.

Each file takes sections of real worklog prose (so chunk lengths and vocabulary are realistic) and tags them
with a unique file number, so every chunk is distinct. Deterministic for a seed.
"""
from __future__ import annotations

import random
from pathlib import Path

from brain.chunking.markdown import scan_blocks
from brain.config import PROJECT_ROOT


def _paragraphs() -> list[str]:
    out = []
    for path in sorted((PROJECT_ROOT / "docs_corpus").glob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for b in scan_blocks(lines):
            if b.kind in ("prose", "fence", "table"):
                out.append("\n".join(lines[b.start:b.end + 1]))
    return out


def write_corpus(root: Path, files: int, sections_per_file: int = 10, seed: int = 0) -> Path:
    rng = random.Random(seed)
    paras = _paragraphs()
    root.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        parts = [f"# Generated worklog {f}\n"]
        for s in range(sections_per_file):
            body = "\n\n".join(rng.sample(paras, 2))
            parts.append(f"## Section {s} of file {f} (experiment {rng.randrange(10**6)})\n\n{body}\n")
        (root / f"log_{f:05}.md").write_text("\n".join(parts))
    return root
