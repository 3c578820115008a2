# Registrations of the results store and reports beyond the auto-registered
# test_results and test_report: the writer driver (an executable, not a test), the SIGKILL test,
# and the h5py / h5dump check of a results file.
add_executable(results_writer results_writer.c)
target_link_libraries(results_writer PRIVATE attest_harness)
attest_add_python_test(results_sigkill py/results_sigkill.py LABELS unit
  ARGS $<TARGET_FILE:results_writer>)
attest_add_python_test(test_results_h5py py/test_results_h5py.py LABELS unit
  ARGS $<TARGET_FILE:results_writer>)
