#!/usr/bin/env bash
# Run the whole test suite in the project's .venv (scripts/setup.sh makes it). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
