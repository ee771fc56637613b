# SPDX-License-Identifier: BSD-3-Clause
# rfa_add_test(NAME name SOURCES ... [LIBS ...] [MPI_RANKS n ...] [LABELS ...] [MOSTLY_WAITING])
#
# Builds one GoogleTest executable. Without MPI_RANKS it is registered once and runs as a
# plain process (main: rfa_test_main, which initializes Kokkos). With MPI_RANKS it links
# rfa_test_main_mpi (MPI + Kokkos, failures agreed across ranks) and is registered once per
# rank count as name.npN under mpiexec, taking N of CTest's processors. MOSTLY_WAITING: the
# suite's ranks spend their time waiting out deadlines and late ranks (asleep, never in a
# blocking MPI call: tests/common/mpi_test_support.hpp, barrier_idle), so each rank count takes
# one processor and CTest runs other tests beside it.
#
# rfa_add_test_variant(NAME name VARIANT v MPI_RANKS n ... ENVIRONMENT ... [LABELS ...])
#
# Registers an MPI suite built by rfa_add_test once more per rank count, as name.v.npN, with
# the environment given (the same tests under another setting, e.g. another kernel choice).
#
# Test programs have the target property RFA_TEST_CODE (their own code compiles at -O1:
# cmake/RfaCompilerFlags.cmake) and, where RFA_TEST_PRECOMPILED_HEADERS is on, reuse one
# precompiled header of the system headers every suite includes (GoogleTest, Kokkos, MPI, the
# standard library), which is most of a test file's compile time.
#
# RFA_TEST_PRECOMPILED_HEADERS: on for GCC and Clang; a Kokkos with CUDA (whose nvcc_wrapper
# compiles C++) and other compilers build the tests without it.
#
# RFA_TESTS_HOST_CXX: the C++ compiler builds host code only (not nvcc_wrapper, for a Kokkos
# without CUDA), so the CUDA kernels' device code compiled in a test is host code (tests/cuda's
# host checks).
set(RFA_TESTS_HOST_CXX OFF)
if(NOT RFA_KOKKOS_HAS_CUDA AND NOT CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper")
  set(RFA_TESTS_HOST_CXX ON)
endif()
set(_rfa_pch_default OFF)
if(CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$" AND RFA_TESTS_HOST_CXX)
  set(_rfa_pch_default ON)
endif()
option(RFA_TEST_PRECOMPILED_HEADERS "Precompile the system headers the test suites share" ${_rfa_pch_default})

# rfa_test_precompiled_headers_host(target source): the executable whose compilation makes the
# shared precompiled header (tests/common); it has the test programs' flags, so that GCC, which
# rejects a header built with other code-generation flags (-fpie against -fpic), accepts it.
function(rfa_test_precompiled_headers_host target source)
  if(NOT RFA_TEST_PRECOMPILED_HEADERS)
    return()
  endif()
  add_executable(${target} ${source})
  target_link_libraries(${target} PRIVATE GTest::gtest rfa::kokkos rfa_build_flags)
  set(_headers <gtest/gtest.h> <Kokkos_Core.hpp> <algorithm> <cmath> <cstdint> <cstring> <functional>
               <limits> <memory> <numeric> <random> <sstream> <string> <vector>)
  if(RFA_ENABLE_MPI)
    target_link_libraries(${target} PRIVATE MPI::MPI_CXX)
    list(APPEND _headers <mpi.h>)
  endif()
  set_target_properties(${target} PROPERTIES RFA_TEST_CODE ON)
  target_precompile_headers(${target} PRIVATE ${_headers})
  set_property(GLOBAL PROPERTY RFA_TEST_PRECOMPILED_HEADERS_TARGET ${target})
endfunction()

# rfa_mark_test_code(target): `target` (a test program, or a library of test cases) compiles as
# test code; a program whose sources are all C++ reuses the shared precompiled header where
# there is one (a library's position-independent code could not). Such a program links MPI
# whether or not its own code calls it: the header holds <mpi.h>, whose C++ bindings (Open MPI)
# emit code that refers to the MPI library, and it compiles with the flags the host had.
function(rfa_mark_test_code target)
  set_target_properties(${target} PROPERTIES RFA_TEST_CODE ON)
  get_property(_host GLOBAL PROPERTY RFA_TEST_PRECOMPILED_HEADERS_TARGET)
  get_target_property(_type ${target} TYPE)
  get_target_property(_sources ${target} SOURCES)
  list(FILTER _sources EXCLUDE REGEX "[.](cpp|cc|hpp|h)$|^[$]<TARGET_OBJECTS:")  # objects built elsewhere
  if(_host AND _type STREQUAL "EXECUTABLE" AND NOT _sources)
    target_precompile_headers(${target} REUSE_FROM ${_host})
    if(RFA_ENABLE_MPI)
      target_link_libraries(${target} PRIVATE MPI::MPI_CXX)
    endif()
  endif()
endfunction()

set(RFA_MPIEXEC_EXTRA_FLAGS "--oversubscribe" CACHE STRING "Extra mpiexec flags for tests")
function(rfa_mpiexec_flags out)
  set(_extra ${MPIEXEC_PREFLAGS} ${RFA_MPIEXEC_EXTRA_FLAGS})
  # Open MPI refuses to run as root unless told; CI runs as root.
  execute_process(COMMAND id -u OUTPUT_VARIABLE _uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_uid STREQUAL "0")
    list(APPEND _extra --allow-run-as-root)
  endif()
  set(${out} ${_extra} PARENT_SCOPE)
endfunction()

function(rfa_add_test)
  cmake_parse_arguments(T "MOSTLY_WAITING" "NAME;TIMEOUT" "SOURCES;LIBS;MPI_RANKS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest rfa_build_flags)
  rfa_mark_test_code(${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(T_MPI_RANKS)
    target_link_libraries(${T_NAME} PRIVATE rfa_test_main_mpi)
    rfa_mpiexec_flags(_extra)
    foreach(_n IN LISTS T_MPI_RANKS)
      set(_processors ${_n})
      if(T_MOSTLY_WAITING)
        set(_processors 1)
      endif()
      add_test(NAME ${T_NAME}.np${_n}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_n} ${_extra}
                       $<TARGET_FILE:${T_NAME}> ${MPIEXEC_POSTFLAGS})
      set_tests_properties(${T_NAME}.np${_n} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${_processors}
                           LABELS "mpi;${T_LABELS}")
    endforeach()
  else()
    target_link_libraries(${T_NAME} PRIVATE rfa_test_main)
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
    set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
  endif()
endfunction()

function(rfa_add_test_variant)
  cmake_parse_arguments(T "" "NAME;VARIANT;TIMEOUT" "MPI_RANKS;ENVIRONMENT;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  rfa_mpiexec_flags(_extra)
  foreach(_n IN LISTS T_MPI_RANKS)
    add_test(NAME ${T_NAME}.${T_VARIANT}.np${_n}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_n} ${_extra}
                     $<TARGET_FILE:${T_NAME}> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${T_NAME}.${T_VARIANT}.np${_n} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${_n}
                         LABELS "mpi;${T_LABELS}" ENVIRONMENT "${T_ENVIRONMENT}")
  endforeach()
endfunction()
