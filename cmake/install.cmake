# `cmake --install`: the shared library (C ABI), its C header, the `metrale` CLI, a CMake package
# (find_package(metrale) -> metrale::metrale) and a pkg-config file (metrale.pc). The C++ API
# (metrale.hpp) is not installed: libmetrale.so exports the C ABI only (docs/api.md, "Linking").
# libmetrale.so needs at run time: libfmt.so.9 (Debian: libfmt9), libstdc++, and in a CUDA build
# libcudart, libcublasLt and libcublas (README.md, "Installing").
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS metrale EXPORT metrale-targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/metrale/metrale.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/metrale)
install(TARGETS metrale_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(METRALE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/metrale)
install(EXPORT metrale-targets NAMESPACE metrale:: DESTINATION ${METRALE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/metrale-config.cmake.in
                              ${PROJECT_BINARY_DIR}/metrale-config.cmake
                              INSTALL_DESTINATION ${METRALE_CMAKE_DIR})
# Same major version; 0.x minors break (semantic versioning's rule before 1.0).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/metrale-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/metrale-config.cmake
              ${PROJECT_BINARY_DIR}/metrale-config-version.cmake
        DESTINATION ${METRALE_CMAKE_DIR})

# pkg-config: the prefix is found relative to the .pc file, so the tree can be moved.
set(METRALE_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH METRALE_PC_TO_PREFIX /prefix/${METRALE_PC_DIR} /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/metrale.pc.in ${PROJECT_BINARY_DIR}/metrale.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/metrale.pc DESTINATION ${METRALE_PC_DIR})
