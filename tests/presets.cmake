# The asan preset (ASan + UBSan, Debug, -Werror, no CUDA) built whole and its unit tests run from
# the default build's suite, so CI, which builds only the default preset, keeps the project
# clean under the sanitizers and free of warnings. The fuzz-cuda preset: tests/fuzz_engine.cmake.
if(ATTEST_SANITIZE OR ATTEST_HAVE_FUZZ OR NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  return()
endif()
add_test(NAME asan_preset_build
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DPRESET=asan -DBIN=${CMAKE_BINARY_DIR}/asan
          -P ${CMAKE_SOURCE_DIR}/cmake/PresetBuild.cmake)
set_tests_properties(asan_preset_build PROPERTIES LABELS "slow" TIMEOUT 2400
  FIXTURES_SETUP asan_preset)
add_test(NAME asan_preset_unit_tests
  COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${CMAKE_BINARY_DIR}/asan -L unit --output-on-failure
          --no-tests=error)
set_tests_properties(asan_preset_unit_tests PROPERTIES LABELS "slow" TIMEOUT 2400
  FIXTURES_REQUIRED asan_preset)
