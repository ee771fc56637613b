# The consumer test (cmake -P): install this build into a fresh prefix, configure and build
# tests/consumer/project against it with find_package(rfa), and run its programs on 2 ranks.
#   -DBUILD_DIR -DWORK_DIR -DPROJECT_DIR -DGENERATOR -DC_COMPILER -DFortran_COMPILER -DWITH_FORTRAN
#   -DMPIEXEC -DMPIEXEC_FLAGS (a ;-list) -DLINK_FLAGS (for the consumer's programs)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "consumer test: '${cmd}' failed (${rc})\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/rfa/rfa.h include/rfa/rfa_mpi.h include/rfa/rfa_version.h lib/cmake/rfa/rfaConfig.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "consumer test: the install lacks ${f}")
  endif()
endforeach()

run(${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER} -DWITH_FORTRAN=${WITH_FORTRAN}
    "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)

set(programs consumer_c)
if(WITH_FORTRAN)
  list(APPEND programs consumer_fortran)
endif()
foreach(p IN LISTS programs)
  run(${MPIEXEC} -n 2 ${MPIEXEC_FLAGS} ${WORK_DIR}/build/${p})
  message(STATUS "consumer test: ${p} ran on 2 ranks against the installed rfa")
endforeach()
