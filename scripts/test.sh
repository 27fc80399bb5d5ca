#!/usr/bin/env bash
# Run the whole test suite in the project's .venv (scripts/setup.sh makes it). Extra args go to pytest.
# The search-page test drives Debian's chromium; install it when we can (root with apt), else it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing the Debian packages chromium + chromium-driver for the browser test (apt-get, a few" \
         "hundred MB; skip it by installing them yourself or running as non-root) ..." >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "could not install chromium: the browser test will skip" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q "$@"
