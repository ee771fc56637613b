# SPDX-License-Identifier: BSD-3-Clause
# What the optional GPU kernels' modules (RfaCudnn, RfaCutlass) share.

# Declares the AUTO|ON|OFF cache option `name` and sets `result` to SKIP (the option is OFF, or
# there is no CUDA build and AUTO asked) or LOOK (go and find the dependencies). ON without CUDA,
# or a value that is none of the three, stops the configuration.
function(rfa_gpu_option name doc result)
  set(${name} AUTO CACHE STRING "${doc}: AUTO (when its dependencies are found), ON, OFF")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  if(NOT ${name} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "rfa: ${name} is '${${name}}'; it must be AUTO, ON or OFF")
  endif()
  set(${result} LOOK PARENT_SCOPE)
  if(${name} STREQUAL "OFF")
    set(${result} SKIP PARENT_SCOPE)
  elseif(NOT RFA_ENABLE_CUDA)
    if(${name} STREQUAL "ON")
      message(FATAL_ERROR "rfa: ${name}=ON needs RFA_ENABLE_CUDA=ON")
    endif()
    set(${result} SKIP PARENT_SCOPE)
  endif()
endfunction()

# The site-packages folder of the first Python 3 found ("" without one): where PyPI's header
# packages land.
function(rfa_python_purelib result)
  set(${result} "" PARENT_SCOPE)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                    OUTPUT_VARIABLE _purelib OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(${result} "${_purelib}" PARENT_SCOPE)
  endif()
endfunction()
