# SPDX-License-Identifier: BSD-3-Clause
# rfa_add_mpi_program_test(NAME test_name TARGET target RANKS n [TIMEOUT s])
#
# Registers a plain program (C, Fortran or an example: not a GoogleTest suite) as a CTest test
# run under mpiexec -n n, with the same flags as rfa_add_test (--oversubscribe, and
# --allow-run-as-root when configured as root). The program's exit status is the verdict.
include_guard(GLOBAL)

function(rfa_add_mpi_program_test)
  cmake_parse_arguments(T "" "NAME;TARGET;RANKS;TIMEOUT" "" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(_extra ${MPIEXEC_PREFLAGS} ${RFA_MPIEXEC_EXTRA_FLAGS})
  execute_process(COMMAND id -u OUTPUT_VARIABLE _uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_uid STREQUAL "0")
    list(APPEND _extra --allow-run-as-root)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} ${_extra}
                   $<TARGET_FILE:${T_TARGET}> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} PROCESSORS ${T_RANKS} LABELS "mpi;capi")
endfunction()
