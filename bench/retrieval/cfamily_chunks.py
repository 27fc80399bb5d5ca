"""Chunk every C, C++ and CUDA file under a folder and print what the chunks look like.

    python bench/retrieval/cfamily_chunks.py DIR     (e.g. /usr/local/cuda-13.0/include: CUB, Thrust, the CUDA runtime)

Prints files, chunks, seconds, chunk size (max, p95, mean, how many under 200 and over HARD_MAX characters),
chunks whose text is not exactly their cited source lines, and non-blank lines left out of every chunk. Nothing
is copied or indexed: the files are read where they are.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from brain.chunking import HARD_MAX, UnsupportedFile, chunk_file  # noqa: E402
from brain.chunking.cfamily import SUFFIXES  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit(__doc__)
    root = Path(sys.argv[1])
    files = [p for p in sorted(root.rglob("*")) if p.suffix.lower() in SUFFIXES and p.is_file()]
    sizes, inexact, uncovered, skipped = [], 0, 0, 0
    t0 = time.perf_counter()
    for path in files:
        try:
            chunks = chunk_file(path, str(path.relative_to(root)))
        except UnsupportedFile:
            skipped += 1
            continue
        lines = path.read_text(encoding="utf-8-sig").splitlines()
        covered = set()
        for c in chunks:
            sizes.append(len(c.text))
            inexact += c.text != "\n".join(lines[c.start_line - 1:c.end_line])
            covered.update(range(c.start_line, c.end_line + 1))
        uncovered += sum(1 for n, line in enumerate(lines, 1) if line.strip() and n not in covered)
    seconds = time.perf_counter() - t0
    if not sizes:
        sys.exit(f"no C, C++ or CUDA files under {root}")
    sizes.sort()
    print(f"{len(files)} files ({skipped} skipped: not UTF-8 text), {len(sizes)} chunks in {seconds:.1f} s")
    print(f"chunk chars: max {sizes[-1]}, p95 {sizes[int(0.95 * len(sizes))]}, mean {statistics.mean(sizes):.0f}; "
          f"under 200: {sum(s < 200 for s in sizes)}, over {HARD_MAX}: {sum(s > HARD_MAX for s in sizes)}")
    print(f"chunks not exactly their source lines: {inexact}; non-blank lines in no chunk: {uncovered}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
