#!/bin/sh
# Export the CUTLASS C++ documentation, media/docs/cpp (the corpus of bench/data/eval_cutlass_docs.json).
# usage: sh bench/retrieval/cutlass_docs_corpus.sh CUTLASS_GIT_DIR OUT_DIR   (a bare mirror or a clone; OUT_DIR is created)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 CUTLASS_GIT_DIR OUT_DIR" >&2; exit 2; }
mkdir -p "$2"
git -C "$1" archive HEAD -- media/docs/cpp | tar -x -C "$2"
find "$2" -name '*.md' | wc -l | xargs echo "markdown files exported to $2:"
