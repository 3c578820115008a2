# cmake -DSRC=... -DBIN=... -P cmake/FuzzCudaBuild.cmake: configures the fuzz-cuda preset (clang,
# libFuzzer, the CUDA candidates, no sanitizer) into BIN and builds all of it, so a default
# build's test suite shows when that combination stops configuring, compiling or linking (it
# did, unseen, until 84bf657: CI builds only the default preset).
function(run_step what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(LENGTH "${out}" n)
    if(n GREATER 6000)
      math(EXPR from "${n} - 6000")
      string(SUBSTRING "${out}" ${from} 6000 out)
    endif()
    message(FATAL_ERROR "${what} failed (exit ${rc}); the end of its output:\n${out}")
  endif()
endfunction()
run_step("configuring the fuzz-cuda preset in ${BIN}" ${CMAKE_COMMAND} --preset fuzz-cuda -B ${BIN})
run_step("building the fuzz-cuda preset in ${BIN}" ${CMAKE_COMMAND} --build ${BIN} -j2)
