#!/usr/bin/env bash
# The policy hash is SHA-256 of the policy file's bytes: `attest list` prints, for the embedded
# default, what sha256sum prints for policies/default.json, and a results file made with
# --policy FILE holds what sha256sum prints for FILE (read back by attest show).
# Usage: cli_policy_hash.sh ATTEST SOURCE_DIR
set -u
attest=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null; exit 1; }

want=$(sha256sum < "$src/policies/default.json" | cut -d' ' -f1)
[ ${#want} -eq 64 ] || fail "sha256sum printed '$want'"
"$attest" list > "$work/out" 2>&1 || fail "attest list: exit $?"
grep -q "<embedded>, .* hash $want\$" "$work/out" || fail "attest list does not print hash $want"

cp "$src/policies/strict.json" "$work/p.json"
printf ' \n' >> "$work/p.json"   # same policy, other bytes: another hash
want=$(sha256sum < "$work/p.json" | cut -d' ' -f1)
"$attest" run --kernel indexer --candidate cpu-indexer --cases 2 --policy "$work/p.json" \
  --out "$work/r.h5" > "$work/out" 2>&1 || fail "attest run --policy: exit $?"
"$attest" show "$work/r.h5" > "$work/out" 2>&1 || fail "attest show: exit $?"
grep -q "hash $want," "$work/out" || fail "the results file does not hold hash $want"
echo PASS
