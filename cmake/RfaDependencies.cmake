# SPDX-License-Identifier: BSD-3-Clause
# Finds rfa's dependencies and presents each as one target:
#   rfa::kokkos (always), MPI::MPI_CXX/MPI::MPI_C, rfa::hwloc, GTest::gtest, benchmark::benchmark.

# ---- Kokkos 3.4 to 4.x: every install exports Kokkos::kokkos.
find_package(Kokkos REQUIRED)
if(NOT TARGET Kokkos::kokkos)
  message(FATAL_ERROR "rfa: the Kokkos package at ${Kokkos_DIR} defines no Kokkos::kokkos target")
endif()
# Debian's Trilinos build of Kokkos 3.4 computes its prefix one level short and points the
# target at /usr/lib/include, which does not exist. Replace any missing include directory
# with the one that holds Kokkos_Core.hpp.
get_target_property(_rfa_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
set(_rfa_kokkos_fixed "")
set(_rfa_kokkos_patched FALSE)
foreach(_dir IN LISTS _rfa_kokkos_inc)
  if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
    list(APPEND _rfa_kokkos_fixed "${_dir}")
  else()
    set(_rfa_kokkos_patched TRUE)
  endif()
endforeach()
if(_rfa_kokkos_patched)
  find_path(RFA_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp
            HINTS ${Kokkos_INCLUDE_DIRS} PATHS /usr/include/trilinos /usr/include/kokkos)
  if(NOT RFA_KOKKOS_INCLUDE_DIR)
    message(FATAL_ERROR "rfa: Kokkos::kokkos points at missing include directories "
                        "(${_rfa_kokkos_inc}) and Kokkos_Core.hpp was not found elsewhere; "
                        "set RFA_KOKKOS_INCLUDE_DIR")
  endif()
  message(STATUS "rfa: patching Kokkos::kokkos include path '${_rfa_kokkos_inc}' -> ${RFA_KOKKOS_INCLUDE_DIR}")
  list(APPEND _rfa_kokkos_fixed "${RFA_KOKKOS_INCLUDE_DIR}")
  set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rfa_kokkos_fixed}")
endif()
# The C++ standard: rfa needs C++17; a Kokkos may need more (Kokkos 5 requires C++20 and refuses
# a project that compiles its headers with less). Its exported settings say which: the
# Kokkos_CXX_STANDARD variable and the cxx_std_NN compile feature of Kokkos::kokkos. A higher
# standard asked for on the command line (CMAKE_CXX_STANDARD) is kept; a lower one is an error
# (inside another project, the outer project's own: raised for rfa's code).
set(_rfa_cxx 17)
if(Kokkos_CXX_STANDARD MATCHES "^[0-9]+$" AND Kokkos_CXX_STANDARD GREATER _rfa_cxx)
  set(_rfa_cxx ${Kokkos_CXX_STANDARD})
endif()
get_target_property(_rfa_kokkos_features Kokkos::kokkos INTERFACE_COMPILE_FEATURES)
foreach(_feature IN LISTS _rfa_kokkos_features)
  if(_feature MATCHES "^cxx_std_([0-9]+)$" AND CMAKE_MATCH_1 GREATER _rfa_cxx)
    set(_rfa_cxx ${CMAKE_MATCH_1})
  endif()
endforeach()
if(Kokkos_VERSION VERSION_GREATER_EQUAL 5.0 AND _rfa_cxx LESS 20)
  set(_rfa_cxx 20)
endif()
if(CMAKE_CXX_STANDARD AND CMAKE_CXX_STANDARD LESS _rfa_cxx AND NOT RFA_IS_TOP_LEVEL)
  # Inside another project the outer project's standard is for its own code: rfa's folders take
  # what rfa needs (a variable of rfa's scope, which the outer project does not see).
  message(STATUS "rfa: the outer project's CMAKE_CXX_STANDARD ${CMAKE_CXX_STANDARD} is raised to ${_rfa_cxx} "
                 "for rfa's own code")
elseif(CMAKE_CXX_STANDARD AND CMAKE_CXX_STANDARD LESS _rfa_cxx)
  message(FATAL_ERROR "rfa: CMAKE_CXX_STANDARD is ${CMAKE_CXX_STANDARD}, but rfa with Kokkos ${Kokkos_VERSION} needs "
                      "C++${_rfa_cxx}: leave CMAKE_CXX_STANDARD unset or set it to ${_rfa_cxx} or more")
elseif(CMAKE_CXX_STANDARD)
  set(_rfa_cxx ${CMAKE_CXX_STANDARD})
endif()
set(CMAKE_CXX_STANDARD ${_rfa_cxx})
message(STATUS "rfa: C++${CMAKE_CXX_STANDARD} (the most of rfa's C++17, what Kokkos ${Kokkos_VERSION} requires and CMAKE_CXX_STANDARD)")
add_library(rfa_kokkos INTERFACE)
add_library(rfa::kokkos ALIAS rfa_kokkos)
target_link_libraries(rfa_kokkos INTERFACE Kokkos::kokkos)
message(STATUS "rfa: Kokkos ${Kokkos_VERSION} from ${Kokkos_DIR}")
# A Kokkos with its CUDA backend makes the engine run on CUDA devices too (its device buffers
# are Views in Kokkos::CudaSpace; kernels_cuda computes the blocks): docs/architecture.md §8.
set(RFA_KOKKOS_HAS_CUDA OFF)
if("CUDA" IN_LIST Kokkos_DEVICES)
  set(RFA_KOKKOS_HAS_CUDA ON)
  if(NOT RFA_ENABLE_CUDA)
    message(FATAL_ERROR "rfa: the Kokkos at ${Kokkos_DIR} has its CUDA backend, so the engine needs the CUDA "
                        "kernels: configure with -DRFA_ENABLE_CUDA=ON (or point Kokkos_ROOT at a host-only Kokkos)")
  endif()
  message(STATUS "rfa: Kokkos has CUDA: the engine runs on CUDA devices (Kokkos_DEVICES: ${Kokkos_DEVICES})")
  # Lambdas in device code (the head exchange's row copies and the value checks' scan are
  # KOKKOS_LAMBDA loops on the device), checked in Kokkos' own terms: before Kokkos 4 an option
  # (Kokkos_ENABLE_CUDA_LAMBDA) that a site may have left off; from 4 on always there.
  if(Kokkos_VERSION VERSION_LESS 4.0)
    kokkos_check(OPTIONS CUDA_LAMBDA)
  endif()
endif()

# ---- MPI
if(RFA_ENABLE_MPI)
  # rfa calls MPI's C interface only (rfa_core links MPI::MPI_C): the C++ test and benchmark
  # programs that link MPI::MPI_CXX get no deprecated C++ bindings either.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI REQUIRED COMPONENTS C CXX)
endif()

# ---- hwloc (pkg-config module 'hwloc')
if(RFA_ENABLE_HWLOC)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(RFA_HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
  add_library(rfa::hwloc ALIAS PkgConfig::RFA_HWLOC)
endif()

# ---- NCCL (ships with the CUDA toolkit here; NCCL_ROOT may point elsewhere)
if(RFA_ENABLE_NCCL)
  if(NOT RFA_ENABLE_CUDA)
    message(FATAL_ERROR "rfa: RFA_ENABLE_NCCL needs RFA_ENABLE_CUDA")
  endif()
  find_package(CUDAToolkit REQUIRED)
  find_path(RFA_NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
  find_library(RFA_NCCL_LIBRARY nccl HINTS ${NCCL_ROOT}/lib ${NCCL_ROOT}/lib64 ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
  add_library(rfa_nccl INTERFACE)
  add_library(rfa::nccl ALIAS rfa_nccl)
  target_include_directories(rfa_nccl INTERFACE ${RFA_NCCL_INCLUDE_DIR})
  target_link_libraries(rfa_nccl INTERFACE ${RFA_NCCL_LIBRARY} CUDA::cudart)
endif()

# ---- Fortran
if(RFA_ENABLE_FORTRAN)
  enable_language(Fortran)
endif()

# ---- tests and benchmarks
if(RFA_ENABLE_TESTS)
  find_package(GTest REQUIRED)
endif()
if(RFA_ENABLE_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
