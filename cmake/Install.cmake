# Installation: `cmake --install build --prefix P` puts the attest command in P/bin, the public
# headers in P/include/attest, the libraries in P/lib, an exported CMake package in
# P/lib/cmake/attest (find_package(attest) gives attest::plugin for candidate authors and
# attest::harness, attest::references, attest::reports for library users) and P/lib/pkgconfig/
# attest.pc. Tested by tests/py/test_install.py, which builds a plugin and a program out of tree
# against an installed tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The codecs a plugin may call (numerics.h: fp8, UE8M0, bf16; layout.h: offsets and token
# decoding; status.h), as a static library with position-independent code that a plugin links
# into itself: the attest executable exports no symbols, so a plugin cannot borrow them from it.
add_library(attest_codec STATIC
  ${CMAKE_SOURCE_DIR}/harness/src/core/numerics.c
  ${CMAKE_SOURCE_DIR}/harness/src/core/layout.c
  ${CMAKE_SOURCE_DIR}/harness/src/core/status.c)
set_target_properties(attest_codec PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME codec)
target_include_directories(attest_codec PUBLIC
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/harness/include> $<INSTALL_INTERFACE:include>)
target_link_libraries(attest_codec PUBLIC m)

# attest::plugin: what a candidate plugin builds with, the public headers and the codecs.
add_library(attest_plugin INTERFACE)
set_target_properties(attest_plugin PROPERTIES EXPORT_NAME plugin)
target_link_libraries(attest_plugin INTERFACE attest_codec)

set_target_properties(attest_harness PROPERTIES EXPORT_NAME harness)
set_target_properties(attest_references PROPERTIES EXPORT_NAME references)
set_target_properties(attest_reports PROPERTIES EXPORT_NAME reports)

install(TARGETS attest RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS attest_harness attest_references attest_reports attest_codec attest_plugin
  EXPORT attestTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/harness/include/attest
  ${CMAKE_SOURCE_DIR}/references/include/attest ${CMAKE_SOURCE_DIR}/reports/include/attest
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/generated/attest/build_info.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attest)
install(EXPORT attestTargets NAMESPACE attest::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attest)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/attestConfig.cmake.in
  ${CMAKE_BINARY_DIR}/attestConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attest
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/attestConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/attestConfig.cmake ${CMAKE_BINARY_DIR}/attestConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attest)
# The .pc file finds the prefix from its own place, so `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH ATTEST_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${CMAKE_SOURCE_DIR}/cmake/attest.pc.in ${CMAKE_BINARY_DIR}/attest.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/attest.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
