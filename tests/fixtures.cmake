# Golden fixtures (fixtures/golden, docs/fixtures.md): `attest check` on the committed set with the
# CPU candidates and mutants, corrupt-fixture handling, stored-output comparison under both
# conventions, the stored references against a fresh `attest reference`, the edge tags each
# fixture claims (checked on the data with numpy), `attest fixture make`, and the upstream oracle
# files used as fixtures.
attest_add_python_test(test_fixtures py/test_fixtures.py LABELS "fixtures;cli" TIMEOUT 900)
# False-alarm regression cases (fixtures/false-alarms): pass with every correct candidate under
# the default policy, fail under policies/fixed-v1.json; the slow variant also runs a bounded
# false-alarm benchmark (bench/false_alarms.sh).
attest_add_python_test(test_false_alarms py/test_false_alarms.py LABELS "fixtures;cli" TIMEOUT 300)
attest_add_python_test(test_false_alarms_bench py/test_false_alarms.py ARGS --bench LABELS "slow" TIMEOUT 3000)
# fixture make --outputs-from OLD gates a new kernel on OLD's stored outputs (cli_outputs_from.sh).
add_test(NAME cli_outputs_from COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_outputs_from.sh $<TARGET_FILE:attest>)
set_tests_properties(cli_outputs_from PROPERTIES LABELS cli TIMEOUT 300
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=" PASS_REGULAR_EXPRESSION "^PASS")
