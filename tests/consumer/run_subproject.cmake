# SPDX-License-Identifier: BSD-3-Clause
# The subproject test (cmake -P): an outer project that takes rfa's source tree with
# add_subdirectory (as FetchContent does) is configured twice, and its generated compile commands
# and cache are read:
#   - a C90 project (its C++ standard 14) with no build type: it needs none of GoogleTest,
#     Google Benchmark and Doxygen (each disabled, so that a find_package of one fails the
#     configuration), rfa's tests, benchmarks, documentation and Fortran module are off and no
#     program of perf/ or tests/ is built, the outer build type stays unset and the outer
#     program's compile line has no flag of rfa's (-O3, -march, NDEBUG) and is C99 (as rfa.h is),
#     while rfa's own files (the CUDA kernels' too) are compiled as in Release and as C++17 or
#     later;
#   - a C and Fortran project built as Debug with absolute install folders (as Nix gives them):
#     the Fortran module is on, rfa's files are built without NDEBUG and the .pc files name
#     those folders as they are (the first project's .pc file, of relative folders, finds its
#     prefix from its own place).
# Only the configuration runs: building librfa here would take minutes, and what a subproject
# changes is decided when it is configured.
#   -DSOURCE_DIR (rfa's) -DWORK_DIR -DGENERATOR -DC_COMPILER -DCXX_COMPILER -DFortran_COMPILER
#   -DKokkos_DIR -DWITH_CUDA_KERNELS (the build's RFA_ENABLE_CUDA) -DPKG_CONFIG
function(configure_outer name languages)
  set(dir ${WORK_DIR}/${name})
  file(MAKE_DIRECTORY ${dir}/src)
  file(WRITE ${dir}/src/CMakeLists.txt
       "cmake_minimum_required(VERSION 3.18)\n"
       "project(outer ${languages})\n"
       "set(CMAKE_C_STANDARD 90)\n"
       "set(CMAKE_CXX_STANDARD 14)\n"
       "add_subdirectory(${SOURCE_DIR} rfa)\n"
       "add_executable(outer_app app.c)\n"
       "target_link_libraries(outer_app PRIVATE rfa::rfa)\n")
  file(WRITE ${dir}/src/app.c
       "#include <rfa/rfa.h>\n#include <stdio.h>\n"
       "int main(void) {\n  int major = 0, minor = 0, patch = 0;\n"
       "  rfa_get_version(&major, &minor, &patch);\n  printf(\"%d.%d.%d\\n\", major, minor, patch);\n"
       "  return 0;\n}\n")
  set(compilers -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
  if(languages MATCHES "Fortran")
    list(APPEND compilers -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER})
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${dir}/src -B ${dir}/build -G ${GENERATOR} ${compilers}
                          -DKokkos_DIR=${Kokkos_DIR} -DRFA_ENABLE_CUDA=${WITH_CUDA_KERNELS}
                          -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
                          -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
                          -DCMAKE_DISABLE_FIND_PACKAGE_Doxygen=ON ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "subproject test: the ${name} outer project does not configure (${rc}):\n${out}\n${err}")
  endif()
endfunction()

# The value of a cache entry of the ${name} outer project.
function(cache_value name entry result)
  file(STRINGS ${WORK_DIR}/${name}/build/CMakeCache.txt line REGEX "^${entry}:[A-Z]+=")
  string(REGEX REPLACE "^[^=]*=" "" value "${line}")
  set(${result} "${value}" PARENT_SCOPE)
endfunction()

# The compile command of the first file whose path ends in ${suffix}.
function(compile_command name suffix result)
  file(READ ${WORK_DIR}/${name}/build/compile_commands.json json)
  string(JSON n LENGTH "${json}")
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON file GET "${json}" ${i} file)
    if(file MATCHES "${suffix}$")
      string(JSON command GET "${json}" ${i} command)
      set(${result} "${command}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "subproject test: no compile command of a file ending in ${suffix} in the ${name} project")
endfunction()

function(expect_cache name entry expected)
  cache_value(${name} ${entry} value)
  if(NOT value STREQUAL expected)
    message(FATAL_ERROR "subproject test: in the ${name} outer project ${entry} is '${value}', not '${expected}'")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})

configure_outer(untyped C)
foreach(option TESTS BENCHMARKS DOCS FORTRAN)
  expect_cache(untyped RFA_ENABLE_${option} OFF)
endforeach()
expect_cache(untyped CMAKE_BUILD_TYPE "")
compile_command(untyped /app.c app)
# rfa.h is C99: the outer project's C90 is raised for the files that include it.
if(NOT app MATCHES " -std=(gnu|c)99( |$)")
  message(FATAL_ERROR "subproject test: a C90 outer program that links rfa::rfa is not compiled as C99: ${app}")
endif()
foreach(flag -O3 -march -DNDEBUG)
  if(app MATCHES "(^| )${flag}")
    message(FATAL_ERROR "subproject test: the outer program is compiled with rfa's ${flag}: ${app}")
  endif()
endforeach()
# The library alone: no program of perf/ (the main job, the tools, the benchmarks) or tests/.
file(READ ${WORK_DIR}/untyped/build/compile_commands.json json)
if(json MATCHES "\"file\": \"${SOURCE_DIR}/(perf|tests)/[^\"]*")
  message(FATAL_ERROR "subproject test: an outer project builds ${CMAKE_MATCH_0}")
endif()
# A file of the core (rfa_core), one of the C ABI (librfa, compiled for the baseline x86-64) and,
# with CUDA, one of the CUDA kernels (host code).
set(rfa_files /src/engine/attention_config.cpp /capi/attention.cpp)
if(WITH_CUDA_KERNELS)
  list(APPEND rfa_files /kernels_cuda/src/flash_api.cu)
endif()
foreach(suffix IN LISTS rfa_files)
  compile_command(untyped ${suffix} command)
  # rfa's C++ files take the standard rfa needs, not the outer project's C++14.
  if(NOT suffix MATCHES "[.]cu$" AND NOT command MATCHES " -std=(gnu|c)\\+\\+(17|20|23)( |$)")
    message(FATAL_ERROR "subproject test: rfa's ${suffix} is not compiled as C++17 or later: ${command}")
  endif()
  foreach(flag -O3 -DNDEBUG)
    if(NOT command MATCHES " ${flag}( |$)")
      message(FATAL_ERROR "subproject test: rfa's ${suffix} is compiled without ${flag} in an outer "
                          "project with no build type: ${command}")
    endif()
  endforeach()
endforeach()

# A variable of one of rfa's .pc files as pkg-config reads it from the ${name} project's staging.
function(pc_variable name package variable result)
  set(ENV{PKG_CONFIG_PATH} ${WORK_DIR}/${name}/build/rfa/package-staging)
  execute_process(COMMAND ${PKG_CONFIG} --variable=${variable} ${package} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE value ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "subproject test: pkg-config cannot read ${package}.pc of the ${name} project: ${err}")
  endif()
  set(${result} "${value}" PARENT_SCOPE)
endfunction()

# The .pc file of a relative library folder finds its prefix from its own place.
cache_value(untyped CMAKE_INSTALL_LIBDIR libdir)
pc_variable(untyped rfa libdir value)
if(NOT value STREQUAL "${WORK_DIR}/untyped/build/rfa/package-staging/../../${libdir}")
  message(FATAL_ERROR "subproject test: rfa.pc's libdir is ${value}, not the folder ${libdir} under the prefix "
                      "two levels above the .pc file")
endif()

set(languages C)
if(Fortran_COMPILER)
  set(languages "C Fortran")
endif()
set(lib ${WORK_DIR}/absolute/lib64)
set(include ${WORK_DIR}/absolute/headers)
configure_outer(debug "${languages}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_INSTALL_LIBDIR=${lib}
                -DCMAKE_INSTALL_INCLUDEDIR=${include})
expect_cache(debug CMAKE_BUILD_TYPE Debug)
compile_command(debug /src/engine/attention_config.cpp command)
if(command MATCHES "-DNDEBUG")
  message(FATAL_ERROR "subproject test: rfa's code is compiled with NDEBUG in a Debug outer project: ${command}")
endif()
# Absolute install folders are named as they are by the .pc files.
pc_variable(debug rfa libdir value)
pc_variable(debug rfa includedir value2)
if(NOT value STREQUAL lib OR NOT value2 STREQUAL include)
  message(FATAL_ERROR "subproject test: with absolute install folders rfa.pc names libdir ${value} and "
                      "includedir ${value2}, not ${lib} and ${include}")
endif()
if(Fortran_COMPILER)
  expect_cache(debug RFA_ENABLE_FORTRAN ON)
  pc_variable(debug rfa-fortran moduledir value)
  if(NOT value MATCHES "^${include}/rfa/fortran/")
    message(FATAL_ERROR "subproject test: with absolute install folders rfa-fortran.pc's moduledir is ${value}, "
                        "not under ${include}")
  endif()
endif()
