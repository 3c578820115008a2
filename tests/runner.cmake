# Registrations of the runner module: test_plugin loads a fixture plugin built here.
# test_runner.c and test_runner_device.c are plain auto-registered unit tests.

# A plugin with one usable candidate and one built for another ABI version (MODULE: dlopen only).
add_library(attest_test_plugin MODULE runner_plugin_fixture.c)
target_include_directories(attest_test_plugin PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
set_target_properties(attest_test_plugin PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)

list(APPEND ATTEST_CUSTOM_TESTS test_plugin)
attest_add_cmocka_test(test_plugin test_plugin.c LABELS unit)
if(TARGET test_plugin)
  target_compile_definitions(test_plugin PRIVATE
    ATTEST_TEST_PLUGIN_PATH="$<TARGET_FILE:attest_test_plugin>")
  add_dependencies(test_plugin attest_test_plugin)
endif()
