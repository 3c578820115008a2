# External-process candidates (harness/src/external*.c, python/attest_candidate): the numpy
# examples, every process fault as a verdict, bad input (tests/py/test_external.py).
attest_add_python_test(test_external py/test_external.py LABELS "cli" TIMEOUT 600)
