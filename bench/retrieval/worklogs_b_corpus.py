"""Export the second worklog development set (set B) from git mirrors of its public repositories.

    python bench/retrieval/worklogs_b_corpus.py MIRRORS_DIR OUT_DIR

Each file of bench/data/attempts_labels_worklogs_b.json's "_sources" is written to OUT_DIR byte for byte from
`git show COMMIT:PATH` in MIRRORS_DIR/OWNER+NAME/repo (a bare mirror, as this workplace's fetch brings them;
a clone at MIRRORS_DIR/OWNER+NAME works too). The documents are other people's text: read them where they lie,
never copy them into the repository.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LABELS = Path(__file__).resolve().parents[1] / "data" / "attempts_labels_worklogs_b.json"


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mirrors, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, src in json.loads(LABELS.read_text())["_sources"].items():
        folder = mirrors / src["repo"].replace("/", "+")
        git_dir = folder / "repo" if (folder / "repo").is_dir() else folder / ".git"
        got = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{src['commit']}:{src['path']}"],
                             capture_output=True)
        if got.returncode:
            missing.append(f"{name}: {src['repo']}@{src['commit'][:10]}:{src['path']} ({got.stderr.decode().strip()})")
            continue
        (out / name).write_bytes(got.stdout)
    print(f"{len(json.loads(LABELS.read_text())['_sources']) - len(missing)} worklogs exported to {out}")
    for m in missing:
        print(f"missing: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
