#!/usr/bin/env bash
# Pipeline mode (cli/pipeline_run.c, pipeline_judge.c): each stage's mutant fails at the seam it
# breaks and the report names that seam with request, row and position; a top-k that breaks ties
# the other way passes, and the end-to-end difference its selection causes is reported apart;
# failing chains saved with --save-failures replay through attest check (the mutant fails there,
# the correct chain passes); bad stage specs exit 2 with one line.
# Usage: cli_pipeline.sh ATTEST
set -u
attest=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
cd "$work" || exit 1
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null; exit 1; }
expect() { # WANT_RC ARGS...: runs attest ARGS into out, wants exit WANT_RC
  want=$1; shift
  "$attest" "$@" > "$work/out" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || fail "attest $*: exit $rc, wanted $want"
}
has() { grep -Eq -- "$1" "$work/out" || fail "no line matching: $1"; }
cpu="--candidate indexer=cpu-indexer --candidate topk=cpu-topk --candidate decode=cpu-mla-decode"

expect 1 run --kernel pipeline --candidate indexer=mutant-indexer-scale-off-by-one \
  --candidate topk=cpu-topk --candidate decode=cpu-mla-decode --cases 30 --print-failures 1
has "^FAIL case [0-9]+ kernel=pipeline.*: broke at indexer$"
has "^  indexer  mutant-indexer-scale-off-by-one +FAIL  request [0-9]+, row [0-9]+ \(MTP slot [0-9]+\), position [0-9]+: MISMATCH"
has "^  broke at: indexer [0-9]+$"
# the result line counts the failures as attest run's does (it said "FAIL (30 cases)")
has "^result: FAIL \([1-9][0-9]* of 30 cases failed\)$"
has "replay: attest run --kernel pipeline --candidate indexer=mutant-indexer-scale-off-by-one --candidate topk=cpu-topk --candidate decode=cpu-mla-decode --case-seed 0x"

expect 1 run --kernel pipeline --candidate indexer=cpu-indexer --candidate topk=mutant-topk-page-off-by-one \
  --candidate decode=cpu-mla-decode --cases 30 --print-failures 1 --save-failures "$work"
has "^FAIL case [0-9]+ .*: broke at topk$"
has "^  topk     mutant-topk-page-off-by-one +FAIL  request [0-9]+, row [0-9]+ \(MTP slot [0-9]+\), slot [0-9]+: translation"
has "^  decode   cpu-mla-decode +OK  \(judged on the top-k's own indices\)"
has "^  broke at: topk [0-9]+$"
saved=$(ls "$work"/pipeline-*.h5 | head -3)
[ -n "$saved" ] || fail "--save-failures wrote no case file"

expect 1 run --kernel pipeline --candidate indexer=cpu-indexer --candidate topk=cpu-topk \
  --candidate decode=mutant-mla-scale-off-by-one --cases 30 --print-failures 1
has "^FAIL case [0-9]+ .*: broke at decode$"
has "^  decode   mutant-mla-scale-off-by-one +FAIL  request [0-9]+, query [0-9]+ \(row [0-9]+\), head [0-9]+: MISMATCH"
has "^  broke at: decode [0-9]+$"

# A stage that crashes is a verdict of its seam; the stages after it do not run.
expect 1 run --kernel pipeline --candidate indexer=mutant-indexer-crash --cases 40 --print-failures 1
has "^  indexer  mutant-indexer-crash +FAIL  CRASH"
has "^  topk     reference +NOT RUN  not run: the indexer left no logits"
has "^  broke at: indexer [0-9]+$"

# A correct top-k that gives equal scores to the higher position: no seam breaks; the rows whose
# selection differs only within ties and the output difference it causes are reported.
expect 0 run --kernel pipeline --candidate indexer=cpu-indexer --candidate topk=cpu-topk-ties-high \
  --candidate decode=cpu-mla-decode --cases 100
has "selection vs the reference chain's: [1-9][0-9]* rows within ties in [1-9][0-9]* cases \(largest output difference they cause [0-9.e+-]+, case [0-9]+; lse [0-9.e+-]+; reported, not failed\), 0 rows beyond ties"
has "^result: PASS \(100 cases\)"
expect 0 run --kernel pipeline --candidate topk=cpu-topk-ties-high --cases 1 --case-seed 0x2a
has "^  end-to-end selection vs the reference chain's"

# Stages of any candidate kind: a plugin indexer, and Python (external process) stages where numpy
# is there.
plugin=${ATTEST_BINARY_DIR:-}/plugins/libattest_plugin_example.so
if [ -f "$plugin" ]; then
  expect 0 run --kernel pipeline --candidate "indexer=$plugin:example-indexer" --candidate topk=cpu-topk \
    --candidate decode=cpu-mla-decode --cases 30
fi
src=${ATTEST_SOURCE_DIR:-}
if [ -n "$src" ] && python3 -c "import numpy" 2>/dev/null; then
  expect 0 run --kernel pipeline --candidate "indexer=py:$src/python/examples/numpy_indexer.py:indexer" \
    --candidate topk=cpu-topk-ties-high --candidate "decode=py:$src/python/examples/numpy_mla_decode.py:mla_decode" \
    --cases 10
  has "^result: PASS \(10 cases\)"
fi

# Saved chains replay through attest check.
# shellcheck disable=SC2086
expect 1 check $saved --candidate indexer=cpu-indexer --candidate topk=mutant-topk-page-off-by-one \
  --candidate decode=cpu-mla-decode
has ": broke at topk$"
# shellcheck disable=SC2086
expect 0 check $saved $cpu
has "^result: PASS"
expect 1 check "$work/out" $cpu
has "^UNREADABLE"
# one result line, FAIL with the unreadable count (it printed a PASS line and then "result: FAIL")
cp "$work/out" "$work/junk.h5"
# shellcheck disable=SC2086
expect 1 check $saved "$work/junk.h5" $cpu
has "^result: FAIL \(0 of [0-9]+ case files failed, 1 unreadable\)$"
[ "$(grep -c '^result:' out)" -eq 1 ] || fail "more than one result line"

for bad in "--candidate frob=cpu-indexer" "--candidate topk=no-such-topk" \
           "--candidate indexer=cpu-mla-decode" "--candidate topk=cpu-topk --candidate topk=cpu-topk" \
           "--candidate topk=cpu-topk --save-failures $work/missing/sub" "--candidate topk=cpu-topk --cases 0"; do
  # shellcheck disable=SC2086
  expect 2 run --kernel pipeline $bad
  [ "$(wc -l < out)" -eq 1 ] || fail "run $bad: the usage error is not one line"
done
echo "PASS"
