#!/bin/sh
# Export the CuTe DSL and CUTLASS operator tutorial notebooks (the corpus of bench/data/eval_notebooks.json).
# usage: sh bench/retrieval/notebook_corpus.sh CUTLASS_GIT_DIR OUT_DIR   (a bare mirror or a clone; OUT_DIR is created)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 CUTLASS_GIT_DIR OUT_DIR" >&2; exit 2; }
mkdir -p "$2"
git -C "$1" archive HEAD -- ':(glob)examples/python/CuTeDSL/**/*.ipynb' ':(glob)operators/examples/*.ipynb' \
  | tar -x -C "$2"
find "$2" -name '*.ipynb' | wc -l | xargs echo "notebooks exported to $2:"
