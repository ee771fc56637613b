# SPDX-License-Identifier: BSD-3-Clause
# cuDNN's fused attention as a second CUDA block kernel (kernels_cuda/src/cudnn).
#
# RFA_ENABLE_CUDNN = AUTO (default) | ON | OFF. AUTO builds it when the cuDNN frontend's headers
# and cuDNN's headers are found, ON fails the configuration when they are not. Nothing links
# libcudnn: the frontend loads it at run time (rfa_cudnn_load), so one build runs with or
# without cuDNN installed.
#
# Where the headers are looked for, first hit wins:
#   frontend (cudnn_frontend.h): CUDNN_FRONTEND_INCLUDE_DIR; CUDNN_FRONTEND_ROOT/include; the
#     include/ of the PyPI package nvidia-cudnn-frontend in the Python found first; the
#     copy quickstart.sh unpacks into the build folder (_deps/cudnn-frontend/include).
#   cuDNN (cudnn.h): CUDNN_INCLUDE_DIR; CUDNN_ROOT/include (a site cuDNN module); the CUDA
#     toolkit's include folder; nvidia/cudnn/include of the PyPI package nvidia-cudnn-cu13.
# Sets RFA_HAVE_CUDNN_BUILT (ON/OFF) and, when ON, the target rfa::cudnn_headers.
include(RfaGpuOption)
set(RFA_HAVE_CUDNN_BUILT OFF)
rfa_gpu_option(RFA_ENABLE_CUDNN "Build the cuDNN block kernel" _rfa_cudnn_state)
if(_rfa_cudnn_state STREQUAL "SKIP")
  return()
endif()

rfa_python_purelib(_rfa_purelib)
set(_rfa_python_include "")
if(_rfa_purelib)
  set(_rfa_python_include ${_rfa_purelib}/include ${_rfa_purelib}/nvidia/cudnn/include)
endif()

find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
          HINTS ${CUDNN_FRONTEND_ROOT} ENV CUDNN_FRONTEND_ROOT
          PATH_SUFFIXES include
          PATHS ${_rfa_python_include} ${PROJECT_BINARY_DIR}/_deps/cudnn-frontend/include
          DOC "The cuDNN frontend's include folder (cudnn_frontend.h)")
find_path(CUDNN_INCLUDE_DIR cudnn.h
          HINTS ${CUDNN_ROOT} ENV CUDNN_ROOT ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include
          PATHS ${_rfa_python_include}
          DOC "cuDNN's include folder (cudnn.h)")

set(_rfa_cudnn_missing "")
if(NOT CUDNN_FRONTEND_INCLUDE_DIR)
  string(APPEND _rfa_cudnn_missing " the cuDNN frontend's headers (pip install nvidia-cudnn-frontend, or set "
         "CUDNN_FRONTEND_INCLUDE_DIR);")
else()
  file(STRINGS ${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend_version.h _rfa_fe_version
       REGEX "#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION")
  string(REGEX REPLACE ".*MAJOR_VERSION ([0-9]+).*MINOR_VERSION ([0-9]+).*PATCH_VERSION ([0-9]+).*" "\\1.\\2.\\3"
         RFA_CUDNN_FRONTEND_VERSION "${_rfa_fe_version}")
  # The block kernel uses attributes a recent frontend has (the SDPA implementation's choice among
  # them); the version scripts/fetch_gpu_headers.sh fetches is the one it is built and tested with.
  if(RFA_CUDNN_FRONTEND_VERSION VERSION_LESS 1.32.0)
    string(APPEND _rfa_cudnn_missing " the cuDNN frontend 1.32.0 or newer (the one at ${CUDNN_FRONTEND_INCLUDE_DIR} "
           "is ${RFA_CUDNN_FRONTEND_VERSION}; scripts/fetch_gpu_headers.sh);")
  endif()
endif()
if(NOT CUDNN_INCLUDE_DIR)
  string(APPEND _rfa_cudnn_missing " cuDNN's headers (pip install nvidia-cudnn-cu13, a site cuDNN module via "
         "CUDNN_ROOT, or CUDNN_INCLUDE_DIR);")
endif()
if(_rfa_cudnn_missing)
  if(RFA_ENABLE_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "rfa: RFA_ENABLE_CUDNN=ON but these were not found:${_rfa_cudnn_missing}")
  endif()
  message(STATUS "rfa: the cuDNN block kernel is not built; missing:${_rfa_cudnn_missing}")
  return()
endif()

add_library(rfa_cudnn_headers INTERFACE)
add_library(rfa::cudnn_headers ALIAS rfa_cudnn_headers)
# SYSTEM: the frontend's own warnings are not rfa's.
target_include_directories(rfa_cudnn_headers SYSTEM INTERFACE ${CUDNN_FRONTEND_INCLUDE_DIR} ${CUDNN_INCLUDE_DIR})
# Dynamic loading (no link to libcudnn); no JSON: rfa keys its own plan cache and never serializes.
target_compile_definitions(rfa_cudnn_headers INTERFACE NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING CUDNN_FRONTEND_SKIP_JSON_LIB)
set(RFA_HAVE_CUDNN_BUILT ON)
message(STATUS "rfa: the cuDNN block kernel is built (frontend ${RFA_CUDNN_FRONTEND_VERSION} at "
               "${CUDNN_FRONTEND_INCLUDE_DIR}, cudnn.h at ${CUDNN_INCLUDE_DIR}; libcudnn is loaded at run time)")
