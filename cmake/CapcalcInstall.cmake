# Installing capcalc: the binary, the library with its headers and a CMake package config
# (find_package(capcalc) gives capcalc::capcalc), the data (hardware table, model zoo, schemas,
# validation set) under share/capcalc, where the binary looks for it relative to itself, a man
# page and bash completion. `cpack -G DEB` turns the same install into a Debian package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS capcalc_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT capcalc)
install(TARGETS capcalc EXPORT capcalcTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT capcalc
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/capcalc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT capcalc)
# The binary finds its data at <bindir>/../share/capcalc (src/cli/common.cpp: data_dir()).
install(DIRECTORY data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/capcalc COMPONENT capcalc)
install(FILES packaging/capcalc.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT capcalc)
install(FILES packaging/capcalc.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME capcalc COMPONENT capcalc)

set(capcalc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/capcalc)
install(EXPORT capcalcTargets NAMESPACE capcalc:: DESTINATION ${capcalc_cmake_dir}
        COMPONENT capcalc)
configure_package_config_file(cmake/capcalcConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/capcalcConfig.cmake
                              INSTALL_DESTINATION ${capcalc_cmake_dir})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/capcalcConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/capcalcConfig.cmake
              ${PROJECT_BINARY_DIR}/capcalcConfigVersion.cmake
        DESTINATION ${capcalc_cmake_dir} COMPONENT capcalc)

# cpack -G DEB (run in the build directory). Runtime dependencies are Debian 12's shared
# libraries the binary links (checked by tests/package_deb.cmake with dpkg-deb).
set(CPACK_PACKAGE_NAME capcalc)
set(CPACK_PACKAGE_VENDOR "capcalc developers")
set(CPACK_PACKAGE_CONTACT "capcalc developers <capcalc@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libfmt9")
if(CAPCALC_WITH_ONNX)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libonnx1, libprotobuf32")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Compute, memory, time and cost of neural networks on CPUs, GPUs and TPUs.\n\
 capcalc reads a model (its own layer JSON, ONNX, or a Hugging Face config.json), counts\n\
 parameters, MACs, FLOPs, bytes and activation memory per layer, and predicts inference\n\
 latency, training time, cost and energy on the devices of a sourced hardware table.")
include(CPack)
