# SPDX-License-Identifier: BSD-3-Clause
# The CUDA device helpers (current device, device selection by local rank, stream/event
# wrappers, the order of a context's calls across streams, waits for a stream under a deadline):
# plain C++ over the CUDA runtime API, built when CUDA is on.
#
# Included from src/device/CMakeLists.txt (the layer loop in src/CMakeLists.txt, once
# `device` is listed there) and from src/comm/nccl/CMakeLists.txt, which needs these helpers;
# the guard makes the second inclusion a no-op whichever comes first.
get_property(_rfa_device_added GLOBAL PROPERTY RFA_DEVICE_SOURCES_ADDED)
if(_rfa_device_added OR NOT RFA_ENABLE_CUDA)
  return()
endif()
set_property(GLOBAL PROPERTY RFA_DEVICE_SOURCES_ADDED TRUE)

if(NOT TARGET CUDA::cudart)
  find_package(CUDAToolkit REQUIRED)
endif()
target_sources(rfa_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cuda_error.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_handles.cpp
  ${CMAKE_CURRENT_LIST_DIR}/current_device.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream_order.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream_wait.cpp)
if(RFA_ENABLE_MPI)
  target_sources(rfa_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/select_device.cpp)
endif()
target_link_libraries(rfa_core PUBLIC CUDA::cudart)
