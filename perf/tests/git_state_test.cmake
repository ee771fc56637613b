# SPDX-License-Identifier: BSD-3-Clause
# cmake/RfaGitState.cmake on a scratch repository (cmake -P, with GIT_EXECUTABLE, SCRIPT and
# WORK): a clean checkout records its commit, an edited tracked file adds "-dirty", a new
# commit is recorded again without it (and an untracked file changes nothing), outside a
# repository it is "unknown", and the header is not rewritten when nothing changed (so the
# benchmarks are not recompiled on every build).
function(run_git)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -c user.name=t -c user.email=t@t ${ARGN} WORKING_DIRECTORY "${WORK}/repo"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "git ${ARGN} failed: ${err}")
  endif()
endfunction()
function(expect_commit dir expected)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${dir} -DOUTPUT=${WORK}/state.h
                          -DGIT_EXECUTABLE=${GIT_EXECUTABLE} -P "${SCRIPT}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "RfaGitState.cmake failed in ${dir}")
  endif()
  file(READ "${WORK}/state.h" header)
  if(NOT header MATCHES "#define RFA_PERF_GIT_COMMIT \"${expected}\"")
    message(FATAL_ERROR "expected commit '${expected}' in ${dir}, got:\n${header}")
  endif()
endfunction()
function(head_of out)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD WORKING_DIRECTORY "${WORK}/repo"
                  OUTPUT_VARIABLE h OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(${out} "${h}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/repo" "${WORK}/plain")
run_git(init -q)
file(WRITE "${WORK}/repo/source.cpp" "int a;\n")
run_git(add source.cpp)
run_git(commit -q -m one)
head_of(first)
expect_commit("${WORK}/repo" "${first}")

file(TIMESTAMP "${WORK}/state.h" stamp "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
expect_commit("${WORK}/repo" "${first}")
file(TIMESTAMP "${WORK}/state.h" stamp_again "%s")
if(NOT stamp STREQUAL stamp_again)
  message(FATAL_ERROR "the header was rewritten although the commit had not changed")
endif()

file(WRITE "${WORK}/repo/source.cpp" "int b;\n")
expect_commit("${WORK}/repo" "${first}-dirty")
file(WRITE "${WORK}/repo/notes.txt" "untracked\n")
run_git(commit -q -a -m two)
head_of(second)
if(second STREQUAL first)
  message(FATAL_ERROR "the second commit did not happen")
endif()
expect_commit("${WORK}/repo" "${second}")
set(ENV{GIT_CEILING_DIRECTORIES} "${WORK}")  # the build tree may sit inside a checkout
expect_commit("${WORK}/plain" "unknown")
message(STATUS "git state: clean, dirty, recommitted, untracked and no repository as expected")
