# What a kernel fuzz input means (fuzz/fuzz_inputs.h): decoding order, features, the mutator.
attest_add_cmocka_test(test_fuzz_inputs test_fuzz_inputs.c LIBS attest_fuzz_inputs)
list(APPEND ATTEST_CUSTOM_TESTS test_fuzz_inputs)

# A kernel target allocates nothing per exec on a case it has seen: the target's code
# (fuzz/fuzz_common.c) with every allocation of attest's code counted through -Wl,--wrap
# (test_fuzz_alloc: the indexer target; one kernel per process).
attest_add_cmocka_test(test_fuzz_alloc test_fuzz_alloc.c LIBS attest_fuzz_inputs)
if(TARGET test_fuzz_alloc)
  target_sources(test_fuzz_alloc PRIVATE ${CMAKE_SOURCE_DIR}/fuzz/fuzz_common.c)
  target_link_options(test_fuzz_alloc PRIVATE
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign)
  add_test(NAME test_fuzz_alloc_mla_decode COMMAND test_fuzz_alloc mla-decode)
  set_tests_properties(test_fuzz_alloc_mla_decode PROPERTIES
    LABELS unit ENVIRONMENT "CUDA_VISIBLE_DEVICES=" TIMEOUT 300)
  list(APPEND ATTEST_CUSTOM_TESTS test_fuzz_alloc test_fuzz_alloc_mla_decode)
endif()

# `attest fuzz --engine libfuzzer` on every shipped host mutant and on the correct candidates
# (tests/py/test_fuzz_engine.py). A fuzz build (clang) tests its own targets. A gcc build tests
# itself driving a clang build's targets when clang can link libFuzzer: the fixture
# fuzz_engine_build configures and builds fuzz_indexer, fuzz_mla_decode and fuzz_topk into
# fuzz-engine/ (no sanitizer, no CUDA: a few minutes on 2 cores, so both are labelled slow).
if(ATTEST_HAVE_FUZZ)
  attest_add_python_test(test_fuzz_engine py/test_fuzz_engine.py LABELS "cli;slow" TIMEOUT 1500)
  return()
endif()
find_program(ATTEST_CLANG clang)
if(NOT ATTEST_CLANG)
  return()
endif()
set(probe ${CMAKE_BINARY_DIR}/generated/libfuzzer_probe.c)
file(WRITE ${probe} "#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
execute_process(COMMAND ${ATTEST_CLANG} -fsanitize=fuzzer ${probe} -o ${CMAKE_BINARY_DIR}/generated/libfuzzer_probe
  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT probe_rc EQUAL 0)
  return()
endif()
add_test(NAME fuzz_engine_build
  COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DBIN=${CMAKE_BINARY_DIR}/fuzz-engine
          -DCLANG=${ATTEST_CLANG} -P ${CMAKE_SOURCE_DIR}/cmake/FuzzEngineBuild.cmake)
set_tests_properties(fuzz_engine_build PROPERTIES LABELS "cli;slow" TIMEOUT 1800
  FIXTURES_SETUP fuzz_engine)
attest_add_python_test(test_fuzz_engine py/test_fuzz_engine.py LABELS "cli;slow" TIMEOUT 1500)
set_tests_properties(test_fuzz_engine PROPERTIES FIXTURES_REQUIRED fuzz_engine
  ENVIRONMENT "${ATTEST_TEST_ENV};CUDA_VISIBLE_DEVICES=;ATTEST_FUZZER_DIR=${CMAKE_BINARY_DIR}/fuzz-engine/fuzz")

# The fuzz-cuda preset (the fuzz targets with the CUDA candidates, issue 10's GPU fuzzing) built
# whole and its fuzz and plugin tests run, where CUDA and clang's libFuzzer are both here: CI
# builds only the default preset, and that combination broke unseen before (84bf657). The
# nested suite's own slow end-to-end test is left to the fuzz builds (test_fuzz_engine above).
if(ATTEST_HAVE_CUDA)
  add_test(NAME fuzz_cuda_preset_build
    COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR} -DPRESET=fuzz-cuda
            -DBIN=${CMAKE_BINARY_DIR}/fuzz-cuda -P ${CMAKE_SOURCE_DIR}/cmake/PresetBuild.cmake)
  set_tests_properties(fuzz_cuda_preset_build PROPERTIES LABELS "slow" TIMEOUT 2400
    FIXTURES_SETUP fuzz_cuda_preset)
  add_test(NAME fuzz_cuda_preset_tests
    COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${CMAKE_BINARY_DIR}/fuzz-cuda -R "fuzz|plugin"
            -E "^test_fuzz_engine$" --output-on-failure --no-tests=error)
  set_tests_properties(fuzz_cuda_preset_tests PROPERTIES LABELS "slow" TIMEOUT 1800
    FIXTURES_REQUIRED fuzz_cuda_preset)
endif()
