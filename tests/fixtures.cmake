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
