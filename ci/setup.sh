#!/usr/bin/env bash
# Installs what attest needs on a fresh Debian 12 machine, then configures and builds build/.
# Safe to re-run: it installs only what is missing and rebuilds incrementally.
# Usage: bash ci/setup.sh [--with-python]   (--with-python adds the test-only PyPI packages)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

apt_packages=(build-essential cmake pkg-config clang libclang-rt-14-dev
              libhdf5-dev hdf5-tools libcmocka-dev libjansson-dev python3 python3-pip)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "attest setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--with-python" ]; then
  # Independent oracles for the tests: ml_dtypes for number formats, numpy for references,
  # h5py for reading and writing files without attest; junitparser reads the JUnit reports and
  # pandas the results table as users do.
  if ! python3 -c "import numpy, h5py, ml_dtypes, junitparser, pandas" 2>/dev/null; then
    echo "attest setup: installing numpy h5py ml_dtypes junitparser pandas from PyPI"
    python3 -m pip install -q --disable-pip-version-check numpy h5py ml_dtypes junitparser pandas \
      || python3 -m pip install -q --disable-pip-version-check --break-system-packages numpy h5py ml_dtypes junitparser pandas
  fi
  # Headless Chromium renders the HTML report in test_html_report (which skips the rendering
  # checks, saying so, when it is missing).
  if ! command -v chromium >/dev/null 2>&1; then
    echo "attest setup: installing chromium (Debian) for the HTML report test"
    as_root=""
    [ "$(id -u)" -eq 0 ] || as_root="sudo"
    $as_root apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends chromium >/dev/null \
      || echo "attest setup: chromium could not be installed; the HTML rendering checks will skip"
  fi
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset default >/dev/null
cmake --build build -j "$jobs"
