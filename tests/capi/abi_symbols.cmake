# SPDX-License-Identifier: BSD-3-Clause
# ABI hygiene of librfa (run with cmake -P): every exported dynamic symbol is rfa_* (plus the
# version node of rfa.map), the soname carries the major version, and the C API's entry
# points are really there (so the check cannot pass on an empty or wrong file).
#   -DLIBRARY=<path to librfa.so.X.Y.Z> -DMAJOR=<major>
execute_process(COMMAND nm -D --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D failed on ${LIBRARY}")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
set(exported 0)
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
  string(REGEX REPLACE "@.*$" "" name "${name}")
  if(name STREQUAL "RFA_0")  # the version node (type A), not code
    continue()
  endif()
  if(NOT name MATCHES "^rfa_")
    message(SEND_ERROR "librfa exports a symbol outside the C API: ${line}")
  endif()
  math(EXPR exported "${exported} + 1")
endforeach()
foreach(required rfa_get_version rfa_options_init_sized rfa_context_create rfa_context_create_fint
                 rfa_context_destroy rfa_forward rfa_backward rfa_forward_with_sinks rfa_backward_with_sinks
                 rfa_scatter_bshd rfa_finalize)
  if(NOT symbols MATCHES "[ \t]${required}@")
    message(SEND_ERROR "librfa does not export ${required}")
  endif()
endforeach()
execute_process(COMMAND readelf -d ${LIBRARY} OUTPUT_VARIABLE dynamic)
if(NOT dynamic MATCHES "Library soname: \\[librfa\\.so\\.${MAJOR}\\]")
  message(SEND_ERROR "the soname of ${LIBRARY} is not librfa.so.${MAJOR}")
endif()
message(STATUS "librfa exports ${exported} symbols, all rfa_*; soname librfa.so.${MAJOR}")
