#!/usr/bin/env bash
# Top-k case files and results files (cli/topk_files.c): a mutant's failing cases saved with
# --save-failures replay through attest check (the mutant fails there naming its check, a
# correct candidate passes, a damaged file is UNREADABLE); --out writes a results file that
# attest show prints with each failure's check and that attest replay runs again; an existing
# results file is kept without --force.
# Usage: cli_topk_files.sh ATTEST
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

mkdir saved
expect 1 run --kernel topk --candidate mutant-topk-page-off-by-one --cases 20 --seed 3 \
  --save-failures saved --out r.h5 --print-failures 0
has "^  results: r.h5 \(attest show r.h5\)$"
fails=$(sed -n 's/^  verdicts: OK [0-9]*, MISMATCH \([0-9]*\)$/\1/p' out)
[ -n "$fails" ] && [ "$fails" -gt 0 ] || fail "no failing cases to save"
[ "$(ls saved | grep -c '^topk-[0-9a-f]\{16\}\.h5$')" -eq "$fails" ] || fail "expected $fails case files"

expect 1 check saved/*.h5 --candidate mutant-topk-page-off-by-one
has "^MISMATCH saved/topk-[0-9a-f]{16}\.h5 kernel=topk,.* \[translation\]"
has "^  verdicts: OK 0, failed $fails$"
expect 0 check saved/*.h5 --candidate cpu-topk
has "^  verdicts: OK $fails, failed 0$"
has "^result: PASS \($fails case files\)$"
# A candidate that is no built-in top-k kernel: the files say what they are.
expect 0 check --kernel topk saved/*.h5 --candidate cpu-topk-unsorted
one=$(ls saved/*.h5 | head -1)
head -c 2000 "$one" > saved/cut.h5
expect 1 check saved/cut.h5 "$one" --candidate cpu-topk
has "^UNREADABLE saved/cut.h5$"
has "^  unreadable: 1 files"
has "^result: FAIL \(0 of 1 case files failed, 1 unreadable\)$"
expect 1 replay "$one" --candidate mutant-topk-page-off-by-one
has "\[translation\]"

expect 1 show r.h5
has "campaign: kernel topk, candidate mutant-topk-page-off-by-one, seed 3, 20 cases of 20 planned"
has "^  failing gates: topk $fails$"
has "MISMATCH \[topk\] mutant-topk-page-off-by-one  translation: row [0-9]+ slot [0-9]+: position"
case=$(grep -Eo 'attest replay r.h5 --case [0-9]+' out | head -1 | awk '{print $5}')
[ -n "$case" ] || fail "attest show printed no replay command"
expect 1 replay r.h5 --case "$case"
has "^stored: MISMATCH mutant-topk-page-off-by-one \(translation"
has "^MISMATCH case $case kernel=topk"
expect 0 replay r.h5 --case "$case" --candidate cpu-topk

expect 2 run --kernel topk --candidate cpu-topk --cases 5 --out r.h5
expect 0 run --kernel topk --candidate cpu-topk --cases 5 --out r.h5 --force
expect 0 show r.h5
expect 2 run --kernel topk --candidate cpu-topk --cases 5 --save-failures no-such-dir/sub
has "cannot make the folder"
: > plain
expect 2 run --kernel topk --candidate cpu-topk --cases 5 --save-failures plain
has "exists and is not a folder"
expect 0 run --kernel topk --candidate cpu-topk --cases 5 --save-failures made-here
[ -d made-here ] || fail "--save-failures did not make its missing folder"
echo PASS
