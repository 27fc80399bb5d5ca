"""Export a worklog development set (B to N) from git mirrors of its public repositories.

    python bench/retrieval/worklogs_corpus.py b|c|d|e|f|g|h|i|j|k|l|m|n|o|p|q|r|s|t|u|v|w|x MIRRORS_DIR OUT_DIR

Each file of bench/data/attempts_labels_worklogs_{b,...,n}.json's "_sources" is written to OUT_DIR byte for byte from
`git show COMMIT:PATH` in MIRRORS_DIR/OWNER+NAME/repo (a bare mirror, as this workplace's fetch brings them;
a clone at MIRRORS_DIR/OWNER+NAME works too). The documents are other people's text: read them where they lie,
never copy them into the repository.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
SETS = "bcdefghijklmnopqrstuvwx"  # the letters of the exported worklog sets (A is ../shared/sample-corpora's); the other
# bench scripts take them from here


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in tuple(SETS):
        sys.exit(__doc__)
    labels = DATA / f"attempts_labels_worklogs_{sys.argv[1]}.json"
    mirrors, out = Path(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    missing = []
    for name, src in json.loads(labels.read_text())["_sources"].items():
        folder = mirrors / src["repo"].replace("/", "+")
        git_dir = next((d for d in (folder / "repo", folder / "repo" / ".git", folder / ".git") if (d / "HEAD").is_file()),
                       folder / "repo")  # a bare mirror, or a clone's .git
        got = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{src['commit']}:{src['path']}"],
                             capture_output=True)
        if got.returncode:
            missing.append(f"{name}: {src['repo']}@{src['commit'][:10]}:{src['path']} ({got.stderr.decode().strip()})")
            continue
        (out / name).write_bytes(got.stdout)
    print(f"{len(json.loads(labels.read_text())['_sources']) - len(missing)} worklogs exported to {out}")
    for m in missing:
        print(f"missing: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
