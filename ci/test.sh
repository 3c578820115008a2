#!/usr/bin/env bash
# The test command: install, build, run the whole test suite (GPU tests skip without a device).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
bash ci/setup.sh --with-python
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
