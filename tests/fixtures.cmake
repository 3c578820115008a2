# Golden fixtures (fixtures/golden, docs/fixtures.md): `attest check` on the committed set with the
# CPU candidates and mutants, corrupt-fixture handling, stored-output comparison under both
# conventions, the stored references against a fresh `attest reference`, the edge tags each
# fixture claims (checked on the data with numpy), `attest fixture make`, and the upstream oracle
# files used as fixtures.
attest_add_python_test(test_fixtures py/test_fixtures.py LABELS "fixtures;cli" TIMEOUT 900)
