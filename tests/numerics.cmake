# Registrations of the numerics and layout modules beyond the auto-registered
# test_numerics / test_layout: the ml_dtypes cross-check, which runs the numerics_dump helper
# (an executable, not a test), and the `attest layout describe` CLI checks.
add_executable(numerics_dump numerics_dump.c)
target_link_libraries(numerics_dump PRIVATE attest_harness)
attest_add_python_test(check_numerics py/check_numerics.py LABELS unit
  ARGS $<TARGET_FILE:numerics_dump>)
attest_add_python_test(check_layout_cli py/check_layout_cli.py LABELS unit)
# The inline encoders against the out-of-line ones: sampled in the unit tier, every float32 bit
# pattern in the slow tier (about a minute at -O2).
list(APPEND ATTEST_CUSTOM_TESTS test_numerics_inline)
attest_add_cmocka_test(test_numerics_inline test_numerics_inline.c LABELS unit)
if(TEST test_numerics_inline)
  add_test(NAME test_numerics_inline_all COMMAND test_numerics_inline --all)
  set_tests_properties(test_numerics_inline_all PROPERTIES LABELS slow TIMEOUT 1500)
endif()
