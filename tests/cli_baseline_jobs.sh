#!/usr/bin/env bash
# run --baseline and campaign --baseline with --jobs and --junit (cli/baseline_run.c): N jobs
# print the same failing cases and summary as one, write the same rows in the same order (NEW's,
# then the pair's, per case) and the same JUnit testcases; --json counts both rows of a case;
# campaign --baseline takes all three.
# Usage: cli_baseline_jobs.sh ATTEST
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
# What must not depend on the job count: rows (verdict, candidate, params, message) and testcases.
rows() { "$attest" show "$1" --per-group 100 | grep -E '^ *#[0-9]+ '; }
cases() { grep -oE '<testcase [^>]*name="[^"]*"' "$1"; grep -c '<failure' "$1"; }

pair=(--candidate mutant-indexer-scale-off-by-one --baseline cpu-indexer --cases 24 --seed 3
      --print-failures 5)
expect 1 run "${pair[@]}" --out one.h5 --junit one.xml
grep -v '^attest run:\|results:\|junit:' out > one.txt
expect 1 run "${pair[@]}" --jobs 3 --out three.h5 --junit three.xml
grep -v '^attest run:\|results:\|junit:' out > three.txt
diff one.txt three.txt > /dev/null || fail "printed output differs with --jobs 3: $(diff one.txt three.txt | head -5)"
grep -q "agree 0, differ 24" three.txt || fail "--jobs 3: not 24 differing pairs"
[ "$(grep -c '^case ' three.txt)" -eq 5 ] || fail "--jobs 3: not the first 5 failing cases printed"
grep -q '^case 0 ' three.txt && grep -q '^case 4 ' three.txt || fail "--jobs 3: not cases 0..4 first"
expect 1 show three.h5 --per-group 100
grep -q "48 cases of 48 planned" out || fail "--jobs 3 results: not 24 NEW rows + 24 pair rows"
grep -q "#1 MISMATCH .*mutant-indexer-scale-off-by-one vs cpu-indexer" out ||
  fail "--jobs 3 results: row 1 is not the pair of case 0"
diff <(rows one.h5) <(rows three.h5) > /dev/null || fail "rows differ with --jobs 3"
cases one.xml > one.cases; cases three.xml > three.cases
diff one.cases three.cases > /dev/null || fail "JUnit testcases differ with --jobs 3"
[ "$(grep -c '<testcase ' three.xml)" -eq 48 ] || fail "JUnit: not two testcases per case"
expect 1 replay three.h5 --case 3 --candidate "mutant-indexer-scale-off-by-one vs cpu-indexer"
grep -Eq "replayed verdict: MISMATCH \(reproduced\)" out || fail "a pair row of --jobs 3 does not replay"

# A pair that agrees: exit 0 over jobs too.
expect 0 run --candidate cpu-indexer-heads-reversed --baseline cpu-indexer --cases 20 --jobs 2 --junit ok.xml
grep -q "agree 20, differ 0" out || fail "--jobs 2: the order variant does not agree"
[ "$(grep -c '<failure' ok.xml)" -eq 0 ] || fail "JUnit of an agreeing pair has failures"

# campaign --baseline takes --jobs and --junit.
expect 0 campaign --candidate cpu-mla-decode-tile16 --baseline cpu-mla-decode --cases 12 --jobs 2 --junit c.xml
grep -q "agree 12, differ 0" out || fail "campaign --baseline --jobs 2"
[ -f attest-campaign.h5 ] || fail "campaign --baseline --jobs 2 wrote no default results file"
[ "$(grep -c '<testcase ' c.xml)" -eq 24 ] || fail "campaign --baseline --junit: not 24 testcases"
expect 0 campaign --candidate cpu-indexer --baseline cpu-indexer --cases 6 --jobs 2 --json j.json --force
grep -q '"verb": *"campaign"' j.json || fail "campaign --baseline --json: verb"
grep -q '"cases": *12' j.json || fail "campaign --baseline --json: not 12 rows (6 NEW + 6 pairs)"
expect 1 run "${pair[@]}" --jobs 2 --json r.json
grep -q '"result": *"FAIL"' r.json && grep -q '"failures": *48' r.json ||
  fail "run --baseline --jobs 2 --json: not FAIL with 48 failing rows"
expect 2 run --candidate cpu-indexer --baseline cpu-indexer --cases 2 --jobs 0
echo PASS
