# The top-k family through the CLI (cli/topk_run.c): a correct candidate passes, a mutant fails
# naming its check and printing a replay command, bad input exits 2.
add_test(NAME cli_topk_run COMMAND attest run --kernel topk --candidate cpu-topk-unsorted --cases 500 --seed 4)
set_tests_properties(cli_topk_run PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(500 cases\\)")
add_test(NAME cli_topk_mutant COMMAND attest run --kernel topk --candidate mutant-topk-masked-positions --cases 100)
set_tests_properties(cli_topk_mutant PROPERTIES LABELS "cli" TIMEOUT 120 WILL_FAIL TRUE
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=")
add_test(NAME cli_topk_mutant_report COMMAND attest run --kernel topk --candidate mutant-topk-masked-positions --cases 100)
set_tests_properties(cli_topk_mutant_report PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES="
  PASS_REGULAR_EXPRESSION "MISMATCH case .*\\[range.*masked position.*replay: attest run --kernel topk --candidate mutant-topk-masked-positions --case-seed 0x")
foreach(bad "--candidate;no-such-topk" "--candidate;cpu-topk;--cases;0" "--candidate;cpu-topk;--max-topk;0")
  string(REPLACE ";" "_" tag "${bad}")
  add_test(NAME cli_topk_bad_input_${tag}
    COMMAND sh -c "\"$0\" run --kernel topk \"$@\"; test $? -eq 2" $<TARGET_FILE:attest> ${bad})
  set_tests_properties(cli_topk_bad_input_${tag} PROPERTIES LABELS "cli" TIMEOUT 60)
endforeach()
add_test(NAME cli_topk_run_in_process COMMAND attest run --kernel topk --candidate cpu-topk --cases 200 --seed 4 --no-isolate --reruns 1)
set_tests_properties(cli_topk_run_in_process PROPERTIES LABELS "cli" TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "result: PASS \\(200 cases\\)")

# test_topk also drives the verb's judging loop (cli/topk_run.c), so it links the CLI's archive.
list(APPEND ATTEST_CUSTOM_TESTS test_topk)
attest_add_cmocka_test(test_topk test_topk.c LIBS attest_app)
