# End to end: the verdicts of every candidate (slow tier), the GPU tests and the CLI checks.
list(APPEND ATTEST_CUSTOM_TESTS test_verdicts test_gpu)
attest_add_cmocka_test(test_verdicts test_verdicts.c LABELS "slow;verdicts" TIMEOUT 900)
if(ATTEST_HAVE_CUDA)
  # GPU tests see the device (no CUDA_VISIBLE_DEVICES override) and hold a lock: one at a time.
  attest_add_cmocka_test(test_gpu test_gpu.c LABELS gpu TIMEOUT 600)
  if(TEST test_gpu)
    set_tests_properties(test_gpu PROPERTIES RESOURCE_LOCK gpu)
  endif()
endif()
attest_add_python_test(test_cli py/test_cli.py LABELS "cli" TIMEOUT 900)
