# Tests of the built-in candidates, the registry, the mutants and the plugin example
# (test_kernels.c, test_mutants.c are auto-registered unit tests except where set up here).

# test_kernels loads the documented example plugin, so it needs the plugin's path.
list(APPEND ATTEST_CUSTOM_TESTS test_kernels)
attest_add_cmocka_test(test_kernels test_kernels.c LABELS unit)
if(TARGET test_kernels)
  target_compile_definitions(test_kernels PRIVATE
    ATTEST_PLUGIN_EXAMPLE_PATH="$<TARGET_FILE:attest_plugin_example>")
  add_dependencies(test_kernels attest_plugin_example)
  # The same executable against the upstream oracle files (../shared/oracles; skips without).
  add_test(NAME test_kernels_oracles COMMAND test_kernels --oracles)
  set_tests_properties(test_kernels_oracles PROPERTIES LABELS "fixtures"
    ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()

# The documented plugin, end to end through the CLI (docs/writing-a-candidate.md).
add_test(NAME cli_plugin_example_run
  COMMAND attest run --kernel indexer
          --candidate $<TARGET_FILE:attest_plugin_example>:example-indexer --cases 50 --seed 3)
set_tests_properties(cli_plugin_example_run PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 300)

# attest list shows the built-ins, a plugin loaded with --candidate, and the default policy.
add_test(NAME cli_list
  COMMAND attest list --candidate $<TARGET_FILE:attest_plugin_example>:example-indexer)
set_tests_properties(cli_list PROPERTIES LABELS "cli"
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" TIMEOUT 60
  PASS_REGULAR_EXPRESSION "cpu-indexer.*cpu-mla-decode.*example-indexer.*policies:")
add_test(NAME cli_list_bad_candidate COMMAND attest list --candidate no-such-candidate)
set_tests_properties(cli_list_bad_candidate PROPERTIES LABELS "cli" WILL_FAIL TRUE TIMEOUT 60)
