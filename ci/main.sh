#!/usr/bin/env bash
# The main job: install, build, and run a campaign on the embedded default (no GPU needed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
bash ci/setup.sh
exec build/attest campaign "$@"
