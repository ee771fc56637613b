# SPDX-License-Identifier: BSD-3-Clause
# Compiler flags shared by every rfa target, collected in one interface target.
add_library(rfa_build_flags INTERFACE)
target_compile_options(rfa_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)

if(RFA_ENABLE_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag("-march=native" RFA_HAVE_MARCH_NATIVE)
  if(RFA_HAVE_MARCH_NATIVE)
    target_compile_options(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()
endif()
# The micro-kernels write a*b+c on vectors and rely on it becoming one FMA; ISO C++ mode
# (-std=c++17) turns contraction off unless asked.
target_compile_options(rfa_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=fast>)
# The flash kernels depend on loop vectorization; -O3 turns on GCC's vectorizer
# (and its SLP pass) for every build type that optimizes.
target_compile_options(rfa_build_flags INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>:-O3>)

# Sanitizer configuration (ASan + UBSan), used by the second CI configuration.
option(RFA_ENABLE_SANITIZERS "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(RFA_ENABLE_SANITIZERS)
  target_compile_options(rfa_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(rfa_build_flags INTERFACE -fsanitize=address,undefined)
endif()
