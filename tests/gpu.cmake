# GPU tests of the paged indexer's compute-sanitizer findings (tests/gpu_sanitize.sh): label gpu,
# holds the gpu lock, skips (77) without compute-sanitizer or a device.
if(ATTEST_HAVE_CUDA)
  add_test(NAME gpu_sanitize COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_sanitize.sh $<TARGET_FILE:attest>)
  set_tests_properties(gpu_sanitize PROPERTIES LABELS gpu RESOURCE_LOCK gpu TIMEOUT 900
    SKIP_RETURN_CODE 77 ENVIRONMENT "${ATTEST_TEST_ENV}")
endif()
