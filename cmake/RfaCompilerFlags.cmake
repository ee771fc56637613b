# SPDX-License-Identifier: BSD-3-Clause
# Compiler flags shared by every rfa target, collected in one interface target.
add_library(rfa_build_flags INTERFACE)
target_compile_options(rfa_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
# CI builds with it: a warning in rfa's own C, C++ and CUDA host code fails the build. (nvcc's
# own device-code diagnostics, and those of dependencies' headers, are not rfa's and stay
# warnings.)
option(RFA_WARNINGS_AS_ERRORS "Treat compiler warnings in rfa's code as errors" OFF)
if(RFA_WARNINGS_AS_ERRORS)
  target_compile_options(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>)
endif()

include(CheckCXXCompilerFlag)
if(RFA_ENABLE_NATIVE)
  check_cxx_compiler_flag("-march=native" RFA_HAVE_MARCH_NATIVE)
  if(RFA_HAVE_MARCH_NATIVE)
    # Not for targets with the property RFA_BASELINE_ISA (the C ABI's entry points and the
    # check of the CPU's instruction sets, core/build_isa.hpp): they run before the check can
    # refuse a CPU that lacks what -march=native turned on, so they must run on any x86-64 CPU.
    target_compile_options(rfa_build_flags INTERFACE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<BOOL:$<TARGET_PROPERTY:RFA_BASELINE_ISA>>>>:-march=native>)
  endif()
endif()
# The baseline stated, where x86-64 has one: a -march that CMAKE_CXX_FLAGS or a compiler wrapper
# (Spack's) puts earlier on the command line does not reach those targets either (the last
# -march wins, the sets it implies included).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  check_cxx_compiler_flag("-march=x86-64 -mtune=generic" RFA_HAVE_MARCH_X86_64)
  if(RFA_HAVE_MARCH_X86_64)
    target_compile_options(rfa_build_flags INTERFACE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:$<TARGET_PROPERTY:RFA_BASELINE_ISA>>>:-march=x86-64 -mtune=generic>)
  endif()
endif()
# The kernels pass 32-byte vectors (simd::f8) by value between inline functions; on a target
# without AVX (a build without -march=native) GCC and Clang warn that such calls' ABI differs
# from an AVX build's. The objects that pass them are built for one target (the C ABI's files
# and the CPU check, compiled for the baseline, reach no kernel header; the baseline check of
# perf/common is compiled, never linked), and the vectors never cross the library's interface,
# so the warning (an error under RFA_WARNINGS_AS_ERRORS) is off.
check_cxx_compiler_flag("-Wno-psabi" RFA_HAVE_WNO_PSABI)
if(RFA_HAVE_WNO_PSABI)
  target_compile_options(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-psabi>)
endif()
# The micro-kernels write a*b+c on vectors and rely on it becoming one FMA; ISO C++ mode
# (-std=c++17) turns contraction off unless asked.
target_compile_options(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=fast>)
option(RFA_ENABLE_SANITIZERS "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(RFA_ENABLE_FUZZING "Build the libFuzzer harnesses (Clang; implies ASan + UBSan)" OFF)
# The flash kernels depend on loop vectorization; -O3 turns on GCC's vectorizer
# (and its SLP pass) for every build type that optimizes. Sanitized and fuzzing builds take -O1
# instead (the level ASan's documentation suggests): instrumented -O3 takes twice as long to
# compile (Clang 14, kernels/flash_forward.cpp for the fuzzer: 21 s at -O3 -g, 14 s at -O1 with
# line tables only), and the kernels' explicit vector types stay vectors at any level.
if(RFA_ENABLE_SANITIZERS OR RFA_ENABLE_FUZZING)
  set(_rfa_opt_level -O1)
else()
  set(_rfa_opt_level -O3)
endif()
# Test programs (targets with the property RFA_TEST_CODE: rfa_add_test, cmake/RfaTesting.cmake)
# take -O1 for their own code, their fixtures and checks: it compiles in about 60% of -O3's time
# and their run time is spent in what they call (the library, the kernels and the float64
# reference), which keeps the level above.
set(_rfa_test_opt_level -O1)
target_compile_options(rfa_build_flags INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>:$<IF:$<BOOL:$<TARGET_PROPERTY:RFA_TEST_CODE>>,${_rfa_test_opt_level},${_rfa_opt_level}>>)
# rfa inside another project whose build type is unset (CMakeLists.txt): rfa's code is compiled
# as in Release, the level above and NDEBUG (the CUDA kernels: kernels_cuda/CMakeLists.txt),
# while the outer project's code keeps no flags.
if(RFA_OPTIMIZE_UNTYPED_BUILD)
  target_compile_definitions(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:NDEBUG>)
endif()

# Sanitizer configuration (ASan + UBSan), used by the second CI configuration. The library
# (and the float64 reference) are built with both; the test programs' own code with ASan alone,
# which finds their out-of-bounds accesses and use after free: UBSan's checks tripled the
# compile time of a test file (mask_edges_test.cpp: 16 s against 5.7 s unsanitized and 9.6 s
# with ASan, GCC 12 at -O1), and what the tests check is the library's behaviour, which keeps
# every check. The runtime of both is linked into every program.
if(RFA_ENABLE_SANITIZERS)
  target_compile_options(rfa_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:$<IF:$<BOOL:$<TARGET_PROPERTY:RFA_TEST_CODE>>,-fsanitize=address,-fsanitize=address$<COMMA>undefined$<SEMICOLON>-fno-sanitize-recover=undefined>$<SEMICOLON>-fno-omit-frame-pointer>)
  target_link_options(rfa_build_flags INTERFACE -fsanitize=address,undefined)
endif()

# libFuzzer harnesses (tests/fuzz, scripts/fuzz.sh): Clang only. Every rfa target gets the
# coverage instrumentation libFuzzer steers by, and ASan + UBSan, so that a finding anywhere in
# the library is reported; the harness links libFuzzer's main.
if(RFA_ENABLE_FUZZING)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "RFA_ENABLE_FUZZING needs Clang (CXX=clang++-14): libFuzzer is part of compiler-rt; "
                        "CMAKE_CXX_COMPILER is ${CMAKE_CXX_COMPILER_ID}")
  endif()
  target_compile_options(rfa_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                                -fno-sanitize-recover=undefined>)
  # One copy of the sanitizer runtimes, shared by librfa and the harness: Clang links them
  # statically into executables only, and librfa is linked with --no-undefined.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                  OUTPUT_VARIABLE _rfa_asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(_rfa_sanitizer_dir "${_rfa_asan_runtime}" DIRECTORY)
  target_link_options(rfa_build_flags INTERFACE -fsanitize=address,undefined -shared-libsan
                      "LINKER:-rpath,${_rfa_sanitizer_dir}")
endif()
