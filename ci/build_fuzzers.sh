#!/usr/bin/env bash
# Builds attest's libFuzzer targets as OSS-Fuzz and ClusterFuzzLite call a project's build.sh:
# the compiler and flags come from the environment ($CC, $CFLAGS: the sanitizer and coverage
# flags of the run), the fuzzing engine from $LIB_FUZZING_ENGINE (linked into each target), and
# everything the runner needs lands in $OUT: fuzz_<target>, fuzz_<target>_seed_corpus.zip (the
# repository's corpus/<target>/), fuzz_<target>.dict and fuzz_<target>.options.
#
#   CC=clang CFLAGS="-O1 -g -fsanitize=address,undefined -fsanitize=fuzzer-no-link" \
#   LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/out bash ci/build_fuzzers.sh
#
# Without those variables it uses the values above and OUT=build-oss-fuzz/out. The targets link
# HDF5 and jansson dynamically: an OSS-Fuzz Dockerfile installs libhdf5-dev and libjansson-dev
# and the runner image needs their shared libraries too (or a static HDF5 build).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${CC:=clang}"
: "${CFLAGS:=-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fsanitize=fuzzer-no-link}"
: "${LIB_FUZZING_ENGINE:=-fsanitize=fuzzer}"
: "${OUT:=$src/build-oss-fuzz/out}"
work=${WORK:-$src/build-oss-fuzz}/cmake
targets=(mla_decode indexer casefile policy topk)
command -v zip > /dev/null || { echo "build_fuzzers.sh: zip is required" >&2; exit 2; }
mkdir -p "$OUT" "$work"

# CMAKE_BUILD_TYPE empty: $CFLAGS alone decide optimization and instrumentation.
cmake -S "$src" -B "$work" -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
      -DCMAKE_BUILD_TYPE= -DATTEST_FUZZ=ON -DATTEST_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" \
      -DATTEST_SANITIZE= -DATTEST_CUDA=OFF > "$work/configure.log"
cmake --build "$work" -j"$(nproc 2>/dev/null || echo 2)" \
      --target "${targets[@]/#/fuzz_}"
for t in "${targets[@]}"; do
  cp "$work/fuzz/fuzz_$t" "$OUT/"
  rm -f "$OUT/fuzz_${t}_seed_corpus.zip"
  (cd "$src/fuzz/corpus/$t" && zip -q -r "$OUT/fuzz_${t}_seed_corpus.zip" .)
  for ext in dict options; do
    if [ -f "$src/fuzz/fuzz_$t.$ext" ]; then cp "$src/fuzz/fuzz_$t.$ext" "$OUT/"; fi
  done
done
echo "build_fuzzers.sh: ${#targets[@]} targets in $OUT"
