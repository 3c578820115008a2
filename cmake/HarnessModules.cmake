# The harness as five modules, each an object library in harness/src/<module>/ (see
# docs/architecture.md). A module sees only the public headers of itself and of the modules it may
# depend on (a per-module view of harness/include/attest/ made of links), plus the private headers
# in those modules' folders, so an include that points up or sideways fails to compile. The
# libattest_harness archive that everything else links is the union of the five.

# Which modules each module may depend on. Edges point down only: nothing depends on run.
set(ATTEST_MODULE_DEPS_core "")
set(ATTEST_MODULE_DEPS_gen core)
set(ATTEST_MODULE_DEPS_judge core)
set(ATTEST_MODULE_DEPS_store core judge)
set(ATTEST_MODULE_DEPS_run core judge)
set(ATTEST_MODULES core gen judge store run)

# The module each public header of harness/include/attest/ belongs to.
set(ATTEST_HEADERS_core status numerics rng layout case candidate conventions clock shell verdict
  sha256 isa
  files topk)
set(ATTEST_HEADERS_gen generator minimize pipeline)
set(ATTEST_HEADERS_judge compare bound policy record judge)
set(ATTEST_HEADERS_store casefile casefile_h5 results topk_casefile)
set(ATTEST_HEADERS_run runner device external bench topk_runner)

# Every source lives in a module folder: one left at the top (a rebase from before the split)
# would silently drop out of the library.
file(GLOB _attest_loose RELATIVE ${CMAKE_SOURCE_DIR} CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/harness/src/*.c ${CMAKE_SOURCE_DIR}/harness/src/*.h)
if(_attest_loose)
  message(FATAL_ERROR
    "${_attest_loose}: move into a module folder of harness/src/ (docs/architecture.md)")
endif()

# Every public header has an owner: a new header must be placed before it can be included.
file(GLOB _attest_public_headers RELATIVE ${CMAKE_SOURCE_DIR}/harness/include/attest
  CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/harness/include/attest/*.h)
foreach(h ${_attest_public_headers})
  string(REGEX REPLACE "\\.h$" "" stem ${h})
  set(_owned OFF)
  foreach(m ${ATTEST_MODULES})
    if(stem IN_LIST ATTEST_HEADERS_${m})
      set(_owned ON)
    endif()
  endforeach()
  if(NOT _owned)
    message(FATAL_ERROR
      "harness/include/attest/${h} belongs to no module: add it to cmake/HarnessModules.cmake")
  endif()
endforeach()

set(_attest_objects "")
foreach(m ${ATTEST_MODULES})
  set(view ${CMAKE_BINARY_DIR}/module-headers/${m})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view}/attest)
  set(private_dirs ${CMAKE_SOURCE_DIR}/harness/src/${m})
  foreach(visible ${m} ${ATTEST_MODULE_DEPS_${m}})
    foreach(stem ${ATTEST_HEADERS_${visible}})
      file(CREATE_LINK ${CMAKE_SOURCE_DIR}/harness/include/attest/${stem}.h
        ${view}/attest/${stem}.h SYMBOLIC)
    endforeach()
    if(NOT visible STREQUAL m)
      list(APPEND private_dirs ${CMAKE_SOURCE_DIR}/harness/src/${visible})
    endif()
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/harness/src/${m}/*.c)
  add_library(attest_${m} OBJECT ${sources})
  target_include_directories(attest_${m} PRIVATE ${view} ${CMAKE_BINARY_DIR}/generated
    ${private_dirs})
  target_link_libraries(attest_${m} PRIVATE hdf5::hdf5 hdf5::hdf5_hl PkgConfig::JANSSON
    Threads::Threads)
  list(APPEND _attest_objects $<TARGET_OBJECTS:attest_${m}>)
endforeach()

target_sources(attest_core PRIVATE ${ATTEST_GIT_COMMIT_SOURCE})
add_dependencies(attest_core attest_git_commit)

add_library(attest_harness STATIC ${_attest_objects})
target_include_directories(attest_harness PUBLIC
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/harness/include>
  $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated> $<INSTALL_INTERFACE:include>)
target_link_libraries(attest_harness PUBLIC hdf5::hdf5 hdf5::hdf5_hl PkgConfig::JANSSON
  Threads::Threads ${CMAKE_DL_LIBS} m)

# The comparator's block fast path (judge/compare.c) is compiled once per ISA (isa.h): as in the
# references, no multiply-add may fuse into an FMA, so every copy computes the bits of the
# element-by-element path.
target_compile_options(attest_judge PRIVATE $<$<COMPILE_LANGUAGE:C>:-ffp-contract=off>)
