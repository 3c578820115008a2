#!/usr/bin/env bash
# attest fixture make --outputs-from OLD: a fixture holding an old kernel's outputs gates a new
# kernel without OLD present. An order variant of OLD passes against the stored outputs, a mutant
# of the same kernel fails; a kernel of another family, or two disagreeing spellings, exit 2.
# Usage: cli_outputs_from.sh ATTEST
set -u
attest=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
fail() { echo "FAIL: $*"; cat "$work/out" 2>/dev/null; exit 1; }

make_fixture() { # FILE KERNEL OLD
  "$attest" fixture make "$work/$1" --kernel "$2" --cases 6 --seed 3 --outputs-from "$3" \
    > "$work/out" 2>&1 || fail "fixture make --outputs-from $3: exit $?"
  grep -q "expected outputs: outputs of candidate $3 (its dtypes; conventions " "$work/out" ||
    fail "make does not say whose outputs it stored"
}
gate() { # FILE CANDIDATE WANT_RC
  "$attest" check "$work/$1" --candidate "$2" --against stored > "$work/out" 2>&1
  rc=$?
  [ "$rc" -eq "$3" ] || fail "check $1 --candidate $2 --against stored: exit $rc, wanted $3"
}

make_fixture idx.h5 indexer cpu-indexer
gate idx.h5 cpu-indexer 0
gate idx.h5 cpu-indexer-heads-reversed 0
gate idx.h5 mutant-indexer-scale-off-by-one 1
grep -q "vs stored expected outputs" "$work/out" || fail "the mutant's failure is not against the stored outputs"
gate idx.h5 mutant-indexer-zero-past-length 1

make_fixture dec.h5 mla-decode cpu-mla-decode
gate dec.h5 cpu-mla-decode-tile16 0
gate dec.h5 mutant-mla-scale-off-by-one 1

"$attest" fixture make "$work/bad.h5" --kernel indexer --outputs-from cpu-mla-decode > "$work/out" 2>&1
[ $? -eq 2 ] || fail "--outputs-from a decode kernel for an indexer fixture: not exit 2"
"$attest" fixture make "$work/bad.h5" --kernel indexer --outputs-from cpu-indexer \
  --expected reference > "$work/out" 2>&1
[ $? -eq 2 ] || fail "--outputs-from and a different --expected: not exit 2"
[ "$(wc -l < "$work/out")" -eq 1 ] || fail "the usage error is not one line"
[ ! -e "$work/bad.h5" ] || fail "a refused make left a file"
echo "PASS"
