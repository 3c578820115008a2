# Reliability: hostile plugins (candidates that attack the harness while they run,
# libraries that attack it while they load) and the end-to-end checks of test_reliability.py.
add_library(attest_hostile_plugin MODULE hostile_plugin.c)
target_include_directories(attest_hostile_plugin PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
set_target_properties(attest_hostile_plugin PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
set(ATTEST_HAZARD_PLUGINS "")
foreach(n RANGE 1 11)
  add_library(attest_hazard_plugin_${n} MODULE hostile_plugin.c)
  target_include_directories(attest_hazard_plugin_${n} PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
  target_compile_definitions(attest_hazard_plugin_${n} PRIVATE HAZARD=${n})
  set_target_properties(attest_hazard_plugin_${n} PROPERTIES C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
  list(APPEND ATTEST_HAZARD_PLUGINS $<TARGET_FILE:attest_hazard_plugin_${n}>)
endforeach()
list(JOIN ATTEST_HAZARD_PLUGINS "," ATTEST_HAZARD_PLUGIN_LIST)
attest_add_python_test(test_reliability py/test_reliability.py LABELS cli
  ARGS $<TARGET_FILE:attest_hostile_plugin> "${ATTEST_HAZARD_PLUGIN_LIST}")

# The probe child that loads a plugin first is isolated as the runner's worker is: signals back to
# their defaults, inherited pipes closed (a plugin that reports what it inherited).
add_library(attest_probe_report_plugin MODULE hostile_plugin.c)
target_include_directories(attest_probe_report_plugin PRIVATE ${CMAKE_SOURCE_DIR}/harness/include)
target_compile_definitions(attest_probe_report_plugin PRIVATE HAZARD=12)
set_target_properties(attest_probe_report_plugin PROPERTIES C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/plugins)
attest_add_python_test(test_probe_isolation py/test_probe_isolation.py LABELS cli
  ARGS $<TARGET_FILE:attest_probe_report_plugin>)

# The bad-input campaign in small (10 mutants per loader, special files): 0 crashes, hangs,
# silently wrong results and multi-line errors. The full one: tests/bad_input_campaign.py.
if(Python3_Interpreter_FOUND)
  add_test(NAME bad_input_campaign_smoke
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/bad_input_campaign.py
            ${CMAKE_BINARY_DIR} --per-loader 10 --jobs 1)
  set_tests_properties(bad_input_campaign_smoke PROPERTIES LABELS "slow"
    ENVIRONMENT "CUDA_VISIBLE_DEVICES=" TIMEOUT 900)
endif()
