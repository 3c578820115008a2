#!/usr/bin/env bash
# attest run --sanitize with a stand-in compute-sanitizer (no GPU needed): every case is run
# again in a child under the tool with its own seed and --no-isolate; a report in the child's
# log makes the case SANITIZER with the report's first lines, a clean log leaves it OK; bad
# tool names and a missing tool are usage errors (exit 2). Usage: cli_sanitize.sh ATTEST
set -u
attest=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null; exit 1; }

cat > "$work/compute-sanitizer" <<'TOOL'
#!/usr/bin/env bash
# Stand-in: --tool T --log-file F PROGRAM ARGS. Logs its arguments, writes a banner (and a
# report when FAKE_REPORT is set) into F, then runs PROGRAM.
echo "$*" >> "$FAKE_CALLS"
log=
while [ $# -gt 0 ]; do
  case $1 in --tool) shift 2 ;; --log-file) log=$2; shift 2 ;; *) break ;; esac
done
echo "========= COMPUTE-SANITIZER" > "$log"
if [ -n "${FAKE_REPORT:-}" ]; then
  echo "========= Invalid __global__ read of size 4 bytes" >> "$log"
  echo "=========     at fake_kernel+0x10" >> "$log"
  echo "=========" >> "$log"
fi
echo "========= ERROR SUMMARY: 0 errors" >> "$log"
exec "$@"
TOOL
chmod +x "$work/compute-sanitizer"
export ATTEST_COMPUTE_SANITIZER=$work/compute-sanitizer FAKE_CALLS=$work/calls

"$attest" run --candidate cpu-indexer --cases 4 --seed 3 --sanitize memcheck --quiet >"$work/out" 2>&1
[ $? = 0 ] || fail "a clean log must leave the cases OK"
grep -q "verdicts: OK 4" "$work/out" || fail "expected OK 4"
[ "$(wc -l < "$work/calls")" = 4 ] || fail "expected one tool run per case"
grep -q -- "--tool memcheck --log-file .* run --candidate cpu-indexer --kernel indexer --case-seed 0x[0-9a-f]\{16\} --reruns 1 --no-isolate" "$work/calls" \
  || { cat "$work/calls"; fail "the child's command line"; }

FAKE_REPORT=1 "$attest" run --candidate cpu-indexer --cases 4 --seed 3 --sanitize racecheck \
  --jobs 2 --quiet --max-len 100 >"$work/out" 2>&1
[ $? = 1 ] || fail "a report must fail the run"
grep -q "verdicts: SANITIZER 4" "$work/out" || fail "expected SANITIZER 4"
grep -q "compute-sanitizer racecheck: Invalid __global__ read of size 4 bytes; at fake_kernel+0x10" \
  "$work/out" || fail "the report's first lines must be in the message"
grep -q -- "--max-len 100" "$work/calls" || fail "the child must get the generator bounds"

"$attest" run --candidate cpu-indexer --cases 1 --sanitize nocheck >"$work/out" 2>&1
[ $? = 2 ] || fail "an unknown tool is a usage error"
ATTEST_COMPUTE_SANITIZER=$work/none "$attest" run --candidate cpu-indexer --cases 1 \
  --sanitize memcheck >"$work/out" 2>&1
[ $? = 2 ] && grep -q "compute-sanitizer not found" "$work/out" || fail "a missing tool"
[ -z "$(ls "$work" | grep attest-sanitize)" ] || fail "the log folder must be removed"
echo PASS
