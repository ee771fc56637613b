# SPDX-License-Identifier: BSD-3-Clause
# rfa_add_test(NAME name SOURCES ... [LIBS ...] [MPI_RANKS n ...] [LABELS ...])
#
# Builds one GoogleTest executable. Without MPI_RANKS it is registered once and runs as a
# plain process (main: rfa_test_main, which initializes Kokkos). With MPI_RANKS it links
# rfa_test_main_mpi (MPI + Kokkos, failures agreed across ranks) and is registered once per
# rank count as name.npN under mpiexec.
#
# rfa_add_test_variant(NAME name VARIANT v MPI_RANKS n ... ENVIRONMENT ... [LABELS ...])
#
# Registers an MPI suite built by rfa_add_test once more per rank count, as name.v.npN, with
# the environment given (the same tests under another setting, e.g. another kernel choice).
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
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;MPI_RANKS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest rfa_build_flags)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(T_MPI_RANKS)
    target_link_libraries(${T_NAME} PRIVATE rfa_test_main_mpi)
    rfa_mpiexec_flags(_extra)
    foreach(_n IN LISTS T_MPI_RANKS)
      add_test(NAME ${T_NAME}.np${_n}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_n} ${_extra}
                       $<TARGET_FILE:${T_NAME}> ${MPIEXEC_POSTFLAGS})
      set_tests_properties(${T_NAME}.np${_n} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${_n}
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
