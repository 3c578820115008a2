# Structure and content hashes: the harness modules' include edges (cmake/HarnessModules.cmake,
# docs/architecture.md).
attest_add_python_test(test_module_edges py/test_module_edges.py LABELS unit TIMEOUT 300)

# The policy hash against sha256sum (tests/cli_policy_hash.sh).
add_test(NAME cli_policy_hash COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_policy_hash.sh
  $<TARGET_FILE:attest> ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_policy_hash PROPERTIES LABELS cli TIMEOUT 120
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "^PASS")
