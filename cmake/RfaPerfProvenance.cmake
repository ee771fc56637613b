# SPDX-License-Identifier: BSD-3-Clause
# What a benchmark binary records about how it was built (perf/common/machine_context.cpp):
# the git commit, the compiler and the build type, as compile definitions; and the Python
# that reads their results (perf/ and kernels_cuda/ tests). Configuring again
# after each commit is automatic: the git log of HEAD is a configure dependency.
set(RFA_PERF_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE _rfa_commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rfa_git_rc ERROR_QUIET)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --absolute-git-dir WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE _rfa_git_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_rfa_git_rc EQUAL 0)
    set(RFA_PERF_GIT_COMMIT "${_rfa_commit}")
    foreach(_f HEAD logs/HEAD)
      if(EXISTS "${_rfa_git_dir}/${_f}")
        set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_rfa_git_dir}/${_f}")
      endif()
    endforeach()
  endif()
endif()

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
  target_compile_definitions(${target} PRIVATE
    RFA_PERF_GIT_COMMIT="${RFA_PERF_GIT_COMMIT}"
    RFA_PERF_COMPILER="${CMAKE_${language}_COMPILER_ID} ${CMAKE_${language}_COMPILER_VERSION}"
    RFA_PERF_BUILD_TYPE="${CMAKE_BUILD_TYPE}")
endfunction()
