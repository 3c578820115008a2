# attest run --candidate NEW --baseline OLD (cli/baseline.c): an order variant agrees within both
# bounds and differs bitwise; a mutant differs and the report names the differing elements;
# kernels of different families are refused with exit 2.
set(_bl_env "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=")
add_test(NAME cli_baseline_indexer_bounds COMMAND attest run --candidate cpu-indexer
  --baseline cpu-indexer-heads-reversed --cases 40 --seed 2)
set_tests_properties(cli_baseline_indexer_bounds PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "new vs old \\(within bounds\\): agree 40, differ 0.*result: PASS")
add_test(NAME cli_baseline_decode_bounds COMMAND attest run --candidate cpu-mla-decode
  --baseline cpu-mla-decode-tile16 --cases 30 --seed 2)
set_tests_properties(cli_baseline_decode_bounds PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "agree 30, differ 0.*result: PASS")
add_test(NAME cli_baseline_indexer_bitwise COMMAND attest run --candidate cpu-indexer
  --baseline cpu-indexer-heads-reversed --cases 40 --seed 2 --same bitwise)
set_tests_properties(cli_baseline_indexer_bitwise PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "DIFFER; [0-9]+ elements differ bitwise, first logits.*result: FAIL")
add_test(NAME cli_baseline_self_bitwise COMMAND attest run --candidate cpu-indexer
  --baseline cpu-indexer --cases 40 --seed 2 --same bitwise)
set_tests_properties(cli_baseline_self_bitwise PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "bitwise\\): agree 40, differ 0.*result: PASS")
add_test(NAME cli_baseline_mutant COMMAND attest run --candidate mutant-indexer-scale-off-by-one
  --baseline cpu-indexer --cases 20 --seed 2)
set_tests_properties(cli_baseline_mutant PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "DIFFER gates element.*worst logits element \\[[0-9]+,[0-9]+\\].*closer to the reference: old.*result: FAIL")
# A NEW with NaN where the reference and OLD are finite: OLD is the closer side. Only finite
# elements were summed, and this case was "neither" with equal sums.
add_test(NAME cli_baseline_nonfinite_closer COMMAND attest run --candidate mutant-mla-no-merge-guard
  --baseline cpu-mla-decode --case-seed 0x2ac2ce17a5794a3b)
set_tests_properties(cli_baseline_nonfinite_closer PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}"
  PASS_REGULAR_EXPRESSION "DIFFER gates nonfinite; [0-9]+ elements differ bitwise, first out_bf16\\[[0-9]+\\]: new -?nan, old [^;]*\n *closer to the reference: old \\(inf/nan mismatches new [1-9][0-9]*, old 0;.*result: FAIL")
add_test(NAME cli_baseline_mutant_exit COMMAND attest run --candidate mutant-indexer-scale-off-by-one
  --baseline cpu-indexer --cases 5)
set_tests_properties(cli_baseline_mutant_exit PROPERTIES LABELS "cli" TIMEOUT 300 ENVIRONMENT "${_bl_env}" WILL_FAIL TRUE)
add_test(NAME cli_baseline_bad_family
  COMMAND sh -c "\"$0\" run --candidate cpu-indexer --baseline cpu-mla-decode; test $? -eq 2" $<TARGET_FILE:attest>)
set_tests_properties(cli_baseline_bad_family PROPERTIES LABELS "cli" TIMEOUT 60)
add_test(NAME cli_baseline_bad_same
  COMMAND sh -c "\"$0\" run --candidate cpu-indexer --baseline cpu-indexer --same nearly; test $? -eq 2" $<TARGET_FILE:attest>)
set_tests_properties(cli_baseline_bad_same PROPERTIES LABELS "cli" TIMEOUT 60)
# --baseline on check and campaign, pair rows in results files (tests/cli_baseline_files.sh).
add_test(NAME cli_baseline_files COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_baseline_files.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_baseline_files PROPERTIES LABELS cli TIMEOUT 300
  ENVIRONMENT "${_bl_env}" PASS_REGULAR_EXPRESSION "^PASS")

# attest fuzz --baseline (cli/fuzz_baseline.c): a case on which NEW and OLD disagree is found,
# minimized and saved for attest check --baseline; pairs computing one function give nothing.
attest_add_python_test(test_fuzz_baseline py/test_fuzz_baseline.py LABELS "cli" TIMEOUT 600)

# --jobs and --junit on run --baseline and campaign --baseline (tests/cli_baseline_jobs.sh).
add_test(NAME cli_baseline_jobs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_baseline_jobs.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_baseline_jobs PROPERTIES LABELS cli TIMEOUT 300
  ENVIRONMENT "${_bl_env}" PASS_REGULAR_EXPRESSION "^PASS")
