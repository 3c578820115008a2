# Replays and CI reports: every printed replay command reproduces its case; --junit
# and --json read back.
attest_add_python_test(test_replays py/test_replays.py LABELS cli TIMEOUT 900
  ARGS $<TARGET_FILE:attest_plugin_example>)
# CI reports: --junit and --json read back by junitparser and json.
attest_add_python_test(test_ci_reports py/test_ci_reports.py LABELS cli TIMEOUT 600)
# The HTML report: self-contained, numbers equal the results file, renders in Chromium.
attest_add_python_test(test_html_report py/test_html_report.py LABELS cli TIMEOUT 600)
