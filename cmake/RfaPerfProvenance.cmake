# SPDX-License-Identifier: BSD-3-Clause
# What a benchmark binary records about how it was built (perf/common/machine_context.cpp):
# the git commit its sources are at, from a header that the rfa_git_state target rewrites at
# build time whenever that changes (cmake/RfaGitState.cmake: a commit, or edits to tracked
# files, which add "-dirty"); the compiler and the build type, as compile definitions; and the
# Python that reads their results (perf/ and kernels_cuda/ tests).
find_package(Git QUIET)
set(RFA_GIT_STATE_DIR ${PROJECT_BINARY_DIR}/generated/git_state)
add_custom_target(rfa_git_state
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${RFA_GIT_STATE_DIR}/rfa_git_state.h
          -DGIT_EXECUTABLE=${GIT_EXECUTABLE} -P ${CMAKE_CURRENT_LIST_DIR}/RfaGitState.cmake
  BYPRODUCTS ${RFA_GIT_STATE_DIR}/rfa_git_state.h
  VERBATIM)

# The Python that runs perf/compare, perf/plot and perf/suite under CTest: the first candidate
# that imports numpy, scipy and matplotlib (quickstart.sh installs Debian's python3-numpy,
# python3-scipy and python3-matplotlib, which a pyenv or conda python3 first on PATH lacks).
if(NOT RFA_PERF_PYTHON)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  foreach(_python ${Python3_EXECUTABLE} /usr/bin/python3)
    execute_process(COMMAND ${_python} -c "import numpy, scipy.stats, matplotlib"
                    RESULT_VARIABLE _python_rc OUTPUT_QUIET ERROR_QUIET)
    if(_python_rc EQUAL 0)
      set(RFA_PERF_PYTHON ${_python} CACHE FILEPATH "Python with numpy, scipy and matplotlib for perf/'s scripts")
      break()
    endif()
  endforeach()
endif()

# Adds the provenance definitions to `target` (PRIVATE), for the compiler of `language`.
function(rfa_perf_provenance target language)
  add_dependencies(${target} rfa_git_state)
  target_include_directories(${target} PRIVATE ${RFA_GIT_STATE_DIR})
  target_compile_definitions(${target} PRIVATE
    RFA_PERF_COMPILER="${CMAKE_${language}_COMPILER_ID} ${CMAKE_${language}_COMPILER_VERSION}"
    RFA_PERF_BUILD_TYPE="${CMAKE_BUILD_TYPE}")
endfunction()
