# Registrations of the references module: the upstream-oracle check (label `oracle`
# too, so it can be run alone) and the independent numpy cross-check through the CLI.
list(APPEND ATTEST_CUSTOM_TESTS test_oracles)
attest_add_cmocka_test(test_oracles test_oracles.c LABELS "oracle;fixtures")
attest_add_python_test(check_references py/check_references.py LABELS unit)
