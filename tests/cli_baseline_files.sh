#!/usr/bin/env bash
# --baseline on check and campaign, and results files of a pair (cli/baseline.c, cmd_check.c,
# cmd_campaign.c): an order variant agrees with its baseline within bounds and differs bitwise; a
# mutant differs and fails the check; NEW's row is followed by the pair's row "NEW vs OLD";
# campaign --baseline writes its default results file; a baseline of another family exits 2.
# Usage: cli_baseline_files.sh ATTEST
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

expect 0 fixture make fix.h5 --kernel indexer --cases 5 --seed 4
expect 0 check fix.h5 --candidate cpu-indexer-heads-reversed --baseline cpu-indexer --out a.h5
grep -q "new vs cpu-indexer (within bounds): agree 5, differ 0" out || fail "variant within bounds"
expect 1 check fix.h5 --candidate cpu-indexer-heads-reversed --baseline cpu-indexer --same bitwise
grep -q "DIFFERS from baseline cpu-indexer (bitwise" out || fail "variant bitwise: no DIFFERS line"
grep -q "elements differ bitwise, first logits\[" out || fail "variant bitwise: no element named"
expect 1 check fix.h5 --candidate mutant-indexer-scale-off-by-one --baseline cpu-indexer --out m.h5
grep -q "worst logits element \[" out || fail "mutant: the differing element is not named"
grep -q "closer to the reference: old" out || fail "mutant: the closer side is not old"
# The results file: the pair's row follows the candidate's, named "NEW vs OLD".
expect 1 show m.h5
grep -q "10 cases of 10 planned" out || fail "check --out: not 5 candidate rows + 5 pair rows"
grep -q "#1 MISMATCH .*mutant-indexer-scale-off-by-one vs cpu-indexer  logits:" out ||
  fail "check --out: row 1 is not the pair of case-0"
# The replay line attest show prints for a pair row replays the pair.
expect 1 replay m.h5 --case 1 --candidate "mutant-indexer-scale-off-by-one vs cpu-indexer"
has_line() { grep -Eq -- "$1" out || fail "no line matching: $1"; }
has_line "^stored verdict: MISMATCH   replayed verdict: MISMATCH \(reproduced\)"
has_line "new vs old \(within both bounds\): DIFFER"
expect 1 check fix.h5 --candidate cpu-indexer-heads-reversed --baseline cpu-indexer --same bitwise --out b.h5
expect 1 replay b.h5 --case 1 --candidate "cpu-indexer-heads-reversed vs cpu-indexer"
has_line "against baseline cpu-indexer \(bitwise\)"
expect 1 run --candidate mutant-indexer-scale-off-by-one --baseline cpu-indexer --cases 3 --out r.h5
expect 1 show r.h5
grep -q "6 cases of 6 planned" out || fail "run --baseline --out: not 2 rows per case"
grep -q "#5 MISMATCH .*mutant-indexer-scale-off-by-one vs cpu-indexer" out || fail "run --out: no pair row 5"
expect 0 campaign --candidate cpu-mla-decode --baseline cpu-mla-decode-tile16 --cases 10
grep -q "agree 10, differ 0" out || fail "campaign --baseline: the pair does not agree"
[ -f attest-campaign.h5 ] || fail "campaign --baseline wrote no attest-campaign.h5"
# Again without --out: the next unused name, the first results kept.
expect 0 campaign --candidate cpu-mla-decode --baseline cpu-mla-decode-tile16 --cases 10
[ -f attest-campaign-2.h5 ] || fail "campaign --baseline again wrote no attest-campaign-2.h5"
expect 2 campaign --candidate cpu-mla-decode --baseline cpu-mla-decode-tile16 --cases 10 --out attest-campaign.h5
expect 2 check fix.h5 --candidate cpu-indexer --baseline cpu-mla-decode
[ "$(wc -l < out)" -eq 1 ] || fail "the usage error is not one line"
expect 2 check fix.h5 --candidate cpu-indexer --same bitwise
echo "PASS"
