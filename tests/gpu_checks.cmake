# The GPU checks' tests. gpu_sanitize (tests/gpu_sanitize.sh): compute-sanitizer on the paged
# indexer, the MLA decode and their broken variants; label gpu, holds the gpu lock, skips (77)
# without compute-sanitizer or a device. cli_sanitize (tests/cli_sanitize.sh): --sanitize's
# plumbing with a stand-in tool, no GPU.
if(ATTEST_HAVE_CUDA)
  add_test(NAME gpu_sanitize COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_sanitize.sh $<TARGET_FILE:attest>)
  set_tests_properties(gpu_sanitize PROPERTIES LABELS gpu RESOURCE_LOCK gpu TIMEOUT 900
    SKIP_RETURN_CODE 77 ENVIRONMENT "${ATTEST_TEST_ENV}")
endif()
add_test(NAME cli_sanitize COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_sanitize.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_sanitize PROPERTIES LABELS cli TIMEOUT 300
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=")

# attest bench on a host candidate: a row per shape, in order, timed with the wall clock.
add_test(NAME cli_bench COMMAND attest bench --candidate cpu-indexer
  --shapes "b=1,len=64;b=2,len=100,max_len=200" --iters 2 --warmup 0)
set_tests_properties(cli_bench PROPERTIES LABELS cli TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES="
  PASS_REGULAR_EXPRESSION "b=1,len=64,max_len=64,heads=64,next_n=1 .*b=2,len=100,max_len=200,heads=64,next_n=1 .*host candidate: timed with the wall clock")
# attest bench on an MLA decode host candidate: its shape rows, gathered bytes counted.
add_test(NAME cli_bench_mla COMMAND attest bench --candidate cpu-mla-decode
  --shapes "b=1,s_q=1,heads=4,topk=64;b=2,s_q=2,heads=4,topk=32,ctx=100,layout=mla-v32" --iters 2 --warmup 0)
set_tests_properties(cli_bench_mla PROPERTIES LABELS cli TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES="
  PASS_REGULAR_EXPRESSION "b=1,s_q=1,heads=4,topk=64,ctx=64,layout=mla-v4 .*b=2,s_q=2,heads=4,topk=32,ctx=100,layout=mla-v32 .*host candidate: timed with the wall clock")
# A host candidate has no HBM peak: its % peak column is '-' (it read 0.0 of the H200's 4,270
# GB/s) unless --peak-gbps gives one (a CPU's memory bandwidth, say).
add_test(NAME cli_bench_host_peak COMMAND bash -c "
  out=$($<TARGET_FILE:attest> bench --candidate cpu-indexer --shapes 'b=1,len=64' --iters 2 --warmup 0 2>&1) || { echo \"$out\"; exit 1; }
  echo \"$out\" | grep -q 'no peak for a host candidate' || { echo \"no note: $out\"; exit 1; }
  echo \"$out\" | grep -Eq 'b=1,len=64.* -$' || { echo \"no '-' in % peak: $out\"; exit 1; }
  out=$($<TARGET_FILE:attest> bench --candidate cpu-indexer --shapes 'b=1,len=64' --iters 2 --warmup 0 --peak-gbps 20 2>&1) || { echo \"$out\"; exit 1; }
  echo \"$out\" | grep -q 'peak 20 GB/s' && echo \"$out\" | grep -Eq 'b=1,len=64.* [0-9]+[.][0-9]$' || { echo \"given peak: $out\"; exit 1; }
  echo PASS")
set_tests_properties(cli_bench_host_peak PROPERTIES LABELS cli TIMEOUT 60
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "PASS")
# Bad shapes and options: exit 2 with one line naming the problem, before anything is built.
add_test(NAME cli_bench_errors COMMAND bash -c "
  out=$($<TARGET_FILE:attest> bench --candidate cpu-indexer --shapes 'b=1,len=9,max_len=8' 2>&1); rc=$?
  [ $rc = 2 ] && echo \"$out\" | grep -q 'len 9 exceeds max_len 8' || { echo \"rc $rc: $out\"; exit 1; }
  out=$($<TARGET_FILE:attest> bench --candidate cpu-mla-decode --shapes 'b=1,len=5' 2>&1); rc=$?
  [ $rc = 2 ] && echo \"$out\" | grep -q \"unknown key 'len' (b, s_q, heads, topk, ctx, layout)\" || { echo \"rc $rc: $out\"; exit 1; }
  out=$($<TARGET_FILE:attest> bench --candidate cpu-mla-decode --shapes 'b=1,topk=9,ctx=8' 2>&1); rc=$?
  [ $rc = 2 ] && echo \"$out\" | grep -q 'topk 9 exceeds ctx 8' || { echo \"rc $rc: $out\"; exit 1; }
  out=$($<TARGET_FILE:attest> bench --candidate cpu-indexer --iters 0 2>&1); rc=$?
  [ $rc = 2 ] || { echo \"rc $rc: $out\"; exit 1; }
  echo PASS")
set_tests_properties(cli_bench_errors PROPERTIES LABELS cli TIMEOUT 60
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "PASS")
# The default peak is an H200's: a bench row of another card says so (a device row is written
# here by rewriting a host row's device fields with h5py), an H200 row does not.
add_test(NAME cli_bench_peak_note COMMAND bash -c "
  set -u; d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT
  python3 -c 'import h5py' 2>/dev/null || { echo 'h5py missing: skipped'; exit 77; }
  for card in 'NVIDIA H100 80GB HBM3' 'NVIDIA H200'; do
    rm -f \"$d/b.h5\"
    $<TARGET_FILE:attest> bench --candidate cpu-indexer --shapes 'b=1,len=64' --iters 2 --warmup 0 --peak-gbps 4270 --out \"$d/b.h5\" > /dev/null || exit 1
    python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); t = f['bench'][...]; t['device'] = sys.argv[2].encode(); t['device_timed'] = 1; f['bench'][...] = t\" \"$d/b.h5\" \"$card\" || exit 1
    out=$($<TARGET_FILE:attest> show \"$d/b.h5\" 2>&1) || { echo \"$out\"; exit 1; }
    echo \"$out\" | grep -q \"device: $card; timed with CUDA events\" || { echo \"$out\"; exit 1; }
    n=$(echo \"$out\" | grep -c 'note: % peak is of 4270 GB/s.*an H200.*--peak-gbps')
    case $card in *H200*) want=0 ;; *) want=1 ;; esac
    [ $n = $want ] || { echo \"$card: $n notes, want $want: $out\"; exit 1; }
  done
  echo PASS")
set_tests_properties(cli_bench_peak_note PROPERTIES LABELS cli TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "PASS")

# attest show on a bench file: its rows as attest bench printed them, and the command line; a
# file that is neither a results nor a bench file keeps the results reader's error (exit 2).
add_test(NAME cli_show_bench COMMAND bash -c "
  set -u; d=$(mktemp -d); trap 'rm -rf \"$d\"' EXIT
  $<TARGET_FILE:attest> bench --candidate cpu-indexer --shapes 'b=1,len=64;b=2,len=100,max_len=200' --iters 2 --warmup 0 --out \"$d/b.h5\" > /dev/null || exit 1
  out=$($<TARGET_FILE:attest> show \"$d/b.h5\" 2>&1); rc=$?
  [ $rc = 0 ] || { echo \"show rc $rc: $out\"; exit 1; }
  echo \"$out\" | grep -q '^bench: .*b.h5, 2 rows' &&
  echo \"$out\" | grep -q 'command: .*bench --candidate cpu-indexer' &&
  echo \"$out\" | grep -q '^cpu-indexer: 2 timed runs per shape, no peak' &&
  echo \"$out\" | grep -qE '^  b=1,len=64,max_len=64,heads=64,next_n=1 +[0-9.]+ ' &&
  echo \"$out\" | grep -qE '^  b=2,len=100,max_len=200,heads=64,next_n=1 +[0-9.]+ ' &&
  echo \"$out\" | grep -q 'host candidate: timed with the wall clock' || { echo \"$out\"; exit 1; }
  echo junk > \"$d/j.h5\"
  out=$($<TARGET_FILE:attest> show \"$d/j.h5\" 2>&1); rc=$?
  [ $rc = 2 ] && echo \"$out\" | grep -q 'not an HDF5 file' || { echo \"junk rc $rc: $out\"; exit 1; }
  echo PASS")
set_tests_properties(cli_show_bench PROPERTIES LABELS cli TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "PASS")
