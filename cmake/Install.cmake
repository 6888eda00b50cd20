# What `cmake --install` puts where (the layout: GNUInstallDirs, set up at the
# top of CMakeLists.txt), and the two ways an application that uses the marks
# API (include/fabtrace.h) finds fabtrace: pkg-config (fabtrace.pc) and
# find_package(fabtrace) (targets fabtrace::marks, the header, and
# fabtrace::preload, the LD_PRELOAD library).
include(CMakePackageConfigHelpers)

install(TARGETS fabtrace_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set_target_properties(fabtrace PROPERTIES EXPORT_NAME preload)
install(TARGETS fabtrace EXPORT fabtraceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The marks API: header only; its calls resolve at run time with dlsym.
add_library(fabtrace_marks INTERFACE)
target_include_directories(fabtrace_marks INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(fabtrace_marks INTERFACE ${CMAKE_DL_LIBS})
set_target_properties(fabtrace_marks PROPERTIES EXPORT_NAME marks)
install(TARGETS fabtrace_marks EXPORT fabtraceTargets)
install(FILES include/fabtrace.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/fabtrace)
install(EXPORT fabtraceTargets NAMESPACE fabtrace:: DESTINATION ${cmake_dir})
configure_package_config_file(cmake/fabtraceConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/fabtraceConfig.cmake INSTALL_DESTINATION ${cmake_dir})
# 0.x: a minor version may change what it installs.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/fabtraceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fabtraceConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/fabtraceConfigVersion.cmake
        DESTINATION ${cmake_dir})

# fabtrace.pc, relocatable: its prefix is found from where the file is
# (${pcfiledir}), so `cmake --install --prefix P` needs no reconfigure.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH pc_to_prefix "/${pc_dir}" "/")
string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
configure_file(cmake/fabtrace.pc.in ${CMAKE_CURRENT_BINARY_DIR}/fabtrace.pc.in1 @ONLY)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fabtrace.pc
     INPUT ${CMAKE_CURRENT_BINARY_DIR}/fabtrace.pc.in1)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/fabtrace.pc DESTINATION ${pc_dir})
