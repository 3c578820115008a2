# Replays (issue 11): every replay command attest prints reproduces its case's verdict.
attest_add_python_test(test_replays py/test_replays.py LABELS cli TIMEOUT 900
  ARGS $<TARGET_FILE:attest_plugin_example>)
