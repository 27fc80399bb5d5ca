#!/usr/bin/env bash
# Idempotent set-up: .venv with torch (CPU build from local disk, or the CUDA build already on
# the machine), then this project in editable mode. Re-running is a no-op unless pyproject changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
stamp=.venv/.setup-stamp
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
echo "setting up .venv: torch (CPU build), sentence-transformers, chromadb, FastAPI, the test and CuTe DSL" \
     "extras (first run: several minutes on a 2-core machine; later runs: no-op) ..." >&2
if [ ! -x .venv/bin/python ]; then
  if "$PY" -c 'import torch' 2>/dev/null; then
    # A torch is already installed (possibly a CUDA build): reuse it rather than replace it.
    "$PY" -m venv --system-site-packages .venv
  else
    "$PY" -m venv .venv
  fi
fi
# pip's warnings about this machine's local index folders are noise; real errors still fail the script.
pip() { .venv/bin/python -m pip -q --disable-pip-version-check "$@" 2> >(grep -v 'is ignored: it is neither' >&2); }
if ! .venv/bin/python -W ignore -c 'import torch' 2>/dev/null; then
  # CPU wheel: a plain `pip install torch` would pull a multi-GB CUDA build.
  pip install "torch==2.13.0"
  .venv/bin/python -W ignore -c 'import torch' || { echo "torch could not be installed" >&2; exit 1; }
fi
# Pin whatever torch we now have so no dependency can swap it for a CUDA build.
.venv/bin/python -W ignore -c 'import torch; print("torch==" + torch.__version__)' > .venv/torch-constraint.txt
pip install -c .venv/torch-constraint.txt -e ".[test,cute]"
.venv/bin/python -c 'import brain, kernels, api, cli' || { echo "package import failed" >&2; exit 1; }
echo "$want" > "$stamp"
echo "set-up done in ${SECONDS} s [load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') (1/5/15 min) on $(nproc 2>/dev/null || echo '?') cores]" >&2
