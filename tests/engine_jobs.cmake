# Registrations of the sharded campaign engine: `--jobs N` against one process.
attest_add_python_test(test_jobs py/test_jobs.py LABELS "cli" TIMEOUT 600)
# `attest fuzz` on every shipped CPU mutant and on the correct candidates.
attest_add_python_test(test_fuzz_cli py/test_fuzz_cli.py LABELS "cli" TIMEOUT 900)
