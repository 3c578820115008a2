# Pipeline mode (docs/pipeline.md): the built-in CPU chain passes 2000 generated cases; each
# stage's mutant fails at its seam, named in the report; saved chains replay (cli_pipeline.sh).
set(_pipe_env "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=")
add_test(NAME cli_pipeline_cpu_2000 COMMAND attest run --kernel pipeline --candidate indexer=cpu-indexer
  --candidate topk=cpu-topk --candidate decode=cpu-mla-decode --cases 2000 --seed 1)
set_tests_properties(cli_pipeline_cpu_2000 PROPERTIES LABELS "cli" TIMEOUT 600 ENVIRONMENT "${_pipe_env}"
  PASS_REGULAR_EXPRESSION "verdicts: OK 2000, FAIL 0.*result: PASS \\(2000 cases\\)")
add_test(NAME cli_pipeline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_pipeline.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_pipeline PROPERTIES LABELS cli TIMEOUT 600 ENVIRONMENT "${_pipe_env}"
  PASS_REGULAR_EXPRESSION "^PASS")

# test_pipeline judges seams through the verb's own judge (cli/pipeline_judge.c): the CLI's archive.
list(APPEND ATTEST_CUSTOM_TESTS test_pipeline)
attest_add_cmocka_test(test_pipeline test_pipeline.c LIBS attest_app)
