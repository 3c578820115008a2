# cmake -DSRC=... -DPRESET=... -DBIN=... -P cmake/PresetBuild.cmake: configures CMake preset
# PRESET into BIN and builds all of it, so the default build's test suite (what CI runs) shows
# when another preset stops configuring, compiling or linking: the fuzz-cuda preset did, unseen,
# until 84bf657.
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
run_step("configuring the ${PRESET} preset in ${BIN}" ${CMAKE_COMMAND} --preset ${PRESET} -B ${BIN})
run_step("building the ${PRESET} preset in ${BIN}" ${CMAKE_COMMAND} --build ${BIN} -j2)
