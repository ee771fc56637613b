# SPDX-License-Identifier: BSD-3-Clause
# CUTLASS/CuTe (header-only) for the Hopper kernels of kernels_cuda/src/hopper, compiled for
# sm_90a (wgmma, TMA, setmaxnreg).
#
# RFA_ENABLE_HOPPER = AUTO (default) | ON | OFF. AUTO builds the Hopper kernels when CUTLASS's
# headers are found and nvcc is 12.3 or newer; ON fails the configuration otherwise.
#
# Where cute/tensor.hpp is looked for, first hit wins: CUTLASS_INCLUDE_DIR; CUTLASS_ROOT/include
# (a site CUTLASS >= 3.5); cutlass_library/source/include of the PyPI package nvidia-cutlass in
# the Python found first; the copy scripts/fetch_gpu_headers.sh unpacks into the build folder
# (_deps/cutlass/include).
# Sets RFA_HAVE_HOPPER_BUILT (ON/OFF) and, when ON, the target rfa::cutlass_headers.
include(RfaGpuOption)
set(RFA_HAVE_HOPPER_BUILT OFF)
rfa_gpu_option(RFA_ENABLE_HOPPER "Build the Hopper (sm_90a) kernels" _rfa_hopper_state)
if(_rfa_hopper_state STREQUAL "SKIP")
  return()
endif()

rfa_python_purelib(_rfa_purelib)
set(_rfa_cutlass_python "")
if(_rfa_purelib)
  set(_rfa_cutlass_python ${_rfa_purelib}/cutlass_library/source/include)
endif()
find_path(CUTLASS_INCLUDE_DIR cute/tensor.hpp
          HINTS ${CUTLASS_ROOT} ENV CUTLASS_ROOT
          PATH_SUFFIXES include
          PATHS ${_rfa_cutlass_python} ${PROJECT_BINARY_DIR}/_deps/cutlass/include
          DOC "CUTLASS's include folder (cute/tensor.hpp, cutlass/cutlass.h)")

set(_rfa_hopper_missing "")
if(NOT CUTLASS_INCLUDE_DIR)
  string(APPEND _rfa_hopper_missing " CUTLASS's headers (scripts/fetch_gpu_headers.sh BUILD_DIR, pip install "
         "nvidia-cutlass, a site CUTLASS via CUTLASS_ROOT, or CUTLASS_INCLUDE_DIR);")
endif()
if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.3)
  string(APPEND _rfa_hopper_missing " nvcc 12.3 or newer (this is ${CMAKE_CUDA_COMPILER_VERSION});")
endif()
if(_rfa_hopper_missing)
  if(RFA_ENABLE_HOPPER STREQUAL "ON")
    message(FATAL_ERROR "rfa: RFA_ENABLE_HOPPER=ON but these are missing:${_rfa_hopper_missing}")
  endif()
  message(STATUS "rfa: the Hopper kernels are not built; missing:${_rfa_hopper_missing}")
  return()
endif()

file(STRINGS ${CUTLASS_INCLUDE_DIR}/cutlass/version.h _rfa_cutlass_version
     REGEX "#define CUTLASS_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" RFA_CUTLASS_VERSION
       "${_rfa_cutlass_version}")
if(RFA_CUTLASS_VERSION VERSION_LESS 3.5)
  message(FATAL_ERROR "rfa: CUTLASS ${RFA_CUTLASS_VERSION} at ${CUTLASS_INCLUDE_DIR} is older than 3.5 "
                      "(set CUTLASS_INCLUDE_DIR to a newer one, or RFA_ENABLE_HOPPER=OFF)")
endif()
add_library(rfa_cutlass_headers INTERFACE)
add_library(rfa::cutlass_headers ALIAS rfa_cutlass_headers)
# SYSTEM: CUTLASS's own warnings are not rfa's.
target_include_directories(rfa_cutlass_headers SYSTEM INTERFACE ${CUTLASS_INCLUDE_DIR})
set(RFA_HAVE_HOPPER_BUILT ON)
message(STATUS "rfa: the Hopper kernels are built (CUTLASS ${RFA_CUTLASS_VERSION} at ${CUTLASS_INCLUDE_DIR})")
