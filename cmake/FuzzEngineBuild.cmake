# cmake -DSRC=... -DBIN=... -DCLANG=... -P cmake/FuzzEngineBuild.cmake: the libFuzzer targets of the
# kernels, built with clang into BIN for a gcc build's `attest fuzz --engine libfuzzer --fuzzer`.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -DCMAKE_C_COMPILER=${CLANG}
  -DCMAKE_BUILD_TYPE=Release -DATTEST_FUZZ=ON -DATTEST_CUDA=OFF -DATTEST_SANITIZE=
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring ${BIN} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} -j2 --target fuzz_indexer fuzz_mla_decode fuzz_topk
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the fuzz targets in ${BIN} failed")
endif()
