# Registrations of the case-file module beyond the auto-registered
# test_casefile: the h5py-only check, which runs docs/examples/write_case.py and then
# `attest reference` on its output and on deliberately broken files.
# test_save_failures: attest run --save-failures (kernel path) and attest check --recorded.
attest_add_python_test(test_casefile_h5py py/test_casefile_h5py.py LABELS unit)
attest_add_python_test(test_save_failures py/test_save_failures.py LABELS unit)
