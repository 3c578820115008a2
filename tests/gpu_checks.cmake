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
