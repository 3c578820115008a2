# External-process candidates (harness/src/external*.c, python/attest_candidate): the numpy
# examples, every process fault as a verdict, bad input (tests/py/test_external.py).
attest_add_python_test(test_external py/test_external.py LABELS "cli" TIMEOUT 600)
# The top-k family through the same bridge (harness/src/run/external_topk.c): the numpy example
# and its broken variant, every process fault as a finding, fuzz, check and the pipeline stage.
attest_add_python_test(test_external_topk py/test_external_topk.py LABELS "cli" TIMEOUT 600)
# The top-k fuzz target takes an external candidate too ($ATTEST_FUZZ_CANDIDATE=py:...): the
# numpy example replays the seed corpus without a finding, its broken variant is found.
if(Python3_Interpreter_FOUND)
  add_test(NAME fuzz_replay_topk_external COMMAND fuzz_topk_replay ${CMAKE_SOURCE_DIR}/fuzz/corpus/topk)
  set_tests_properties(fuzz_replay_topk_external PROPERTIES LABELS "fuzz-replay" TIMEOUT 120
    ENVIRONMENT "CUDA_VISIBLE_DEVICES=;ATTEST_PYTHON=${Python3_EXECUTABLE};ATTEST_FUZZ_CANDIDATE=py:${CMAKE_SOURCE_DIR}/python/examples/numpy_topk.py:topk")
  add_test(NAME fuzz_topk_finds_external
    COMMAND sh -c "d=$(mktemp -d) && trap 'rm -rf \"$d\"' EXIT && ATTEST_FUZZ_ARTIFACTS=\"$d\" \"$0\" \"$1\" >/dev/null 2>&1; test $? -ne 0 && ls \"$d\"/fuzz-topk-*.h5 >/dev/null && echo FOUND"
    $<TARGET_FILE:fuzz_topk_replay> ${CMAKE_SOURCE_DIR}/fuzz/corpus/topk)
  set_tests_properties(fuzz_topk_finds_external PROPERTIES LABELS "fuzz-replay" TIMEOUT 120
    ENVIRONMENT "CUDA_VISIBLE_DEVICES=;ATTEST_PYTHON=${Python3_EXECUTABLE};ATTEST_FUZZ_CANDIDATE=py:${CMAKE_SOURCE_DIR}/python/examples/numpy_topk.py:topk_pads_unranked"
    PASS_REGULAR_EXPRESSION "FOUND")
endif()
