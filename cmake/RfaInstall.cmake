# SPDX-License-Identifier: BSD-3-Clause
# Installs the library, the public headers, the CMake package exporting rfa::rfa, the
# pkg-config file rfa.pc (fortran/ adds rfa-fortran.pc) and the licence, which BSD-3-Clause asks
# to travel with the binaries.
include(CMakePackageConfigHelpers)
set(RFA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rfa)

install(TARGETS rfa EXPORT rfaTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # its include folder: capi/CMakeLists.txt
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rfa DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/rfa/rfa_version.h
              ${PROJECT_BINARY_DIR}/include/rfa/rfa_config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rfa)
install(EXPORT rfaTargets NAMESPACE rfa:: DESTINATION ${RFA_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The package's files are made in RFA_PACKAGE_STAGING (CMakeLists.txt); those an older build
# made at the top of this build tree (half a package there) are removed.
file(REMOVE ${PROJECT_BINARY_DIR}/rfaConfig.cmake ${PROJECT_BINARY_DIR}/rfaConfigVersion.cmake
     ${PROJECT_BINARY_DIR}/rfa.pc ${PROJECT_BINARY_DIR}/fortran/rfa-fortran.pc)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rfaConfig.cmake.in
  ${RFA_PACKAGE_STAGING}/rfaConfig.cmake INSTALL_DESTINATION ${RFA_INSTALL_CMAKEDIR})
write_basic_package_version_file(${RFA_PACKAGE_STAGING}/rfaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${RFA_PACKAGE_STAGING}/rfaConfig.cmake ${RFA_PACKAGE_STAGING}/rfaConfigVersion.cmake
        DESTINATION ${RFA_INSTALL_CMAKEDIR})

# pkg-config: the prefix is relative to the .pc file, so `cmake --install --prefix P` works.
set(RFA_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
configure_file(${PROJECT_SOURCE_DIR}/cmake/rfa.pc.in ${RFA_PACKAGE_STAGING}/rfa.pc @ONLY)
install(FILES ${RFA_PACKAGE_STAGING}/rfa.pc DESTINATION ${RFA_INSTALL_PKGCONFIGDIR})
