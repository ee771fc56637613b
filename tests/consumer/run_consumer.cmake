# SPDX-License-Identifier: BSD-3-Clause
# The consumer test (cmake -P): install this build into a fresh prefix, then, as a new user
# would from the README alone (docs/architecture.md §7), build each of the README's programs
# against it and run them on 2 ranks:
#   - one outside CMake project per language (C, C++, Fortran), each the README's CMakeLists.txt
#     block with its program block beside it, found with find_package(rfa);
#   - the C and Fortran programs again with the MPI compiler wrappers and pkg-config alone.
#   -DBUILD_DIR -DWORK_DIR -DBLOCKS_DIR (the README's extracted blocks) -DGENERATOR
#   -DC_COMPILER -DCXX_COMPILER -DFortran_COMPILER -DWITH_FORTRAN -DWITH_DOCS -DMPICC -DMPIFORT
#   -DMPIEXEC -DMPIEXEC_FLAGS (a ;-list) -DLINK_FLAGS (for the consumer's programs)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "consumer test: '${cmd}' failed (${rc})\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB_RECURSE pc_files ${prefix}/*/rfa.pc)
list(LENGTH pc_files n_pc)
foreach(f include/rfa/rfa.h include/rfa/rfa_mpi.h include/rfa/rfa_version.h include/rfa/rfa_config.h
          lib/cmake/rfa/rfaConfig.cmake share/doc/rfa/LICENSE)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "consumer test: the install lacks ${f}")
  endif()
endforeach()
# The HTML reference (docs target, part of the default build) is installed too.
if(WITH_DOCS AND NOT EXISTS ${prefix}/share/doc/rfa/html/index.html)
  message(FATAL_ERROR "consumer test: the install lacks the HTML documentation (share/doc/rfa/html)")
endif()
if(NOT n_pc EQUAL 1)
  message(FATAL_ERROR "consumer test: the install has ${n_pc} rfa.pc files, not one")
endif()
# The CMake package sets each macro of rfa_config.h as a variable of the same name and value.
file(STRINGS ${prefix}/include/rfa/rfa_config.h macros REGEX "^#define RFA_HAVE_[A-Z_]+ [01]$")
file(READ ${prefix}/lib/cmake/rfa/rfaConfig.cmake package)
list(LENGTH macros n_macros)
if(n_macros LESS 7)
  message(FATAL_ERROR "consumer test: rfa_config.h defines ${n_macros} RFA_HAVE_ macros, not 7 or more")
endif()
foreach(line IN LISTS macros)
  string(REGEX REPLACE "^#define (RFA_HAVE_[A-Z_]+) ([01])$" "\\1;\\2" pair "${line}")
  list(GET pair 0 name)
  list(GET pair 1 value)
  if(NOT package MATCHES "\nset\\(${name} ${value}\\)\n")
    message(FATAL_ERROR "consumer test: rfaConfig.cmake does not set ${name} to ${value}, as rfa_config.h defines it")
  endif()
endforeach()

# The build tree is no package: a consumer pointed at it finds none (rather than half of one
# whose targets file is missing), and is told so by find_package itself.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${BLOCKS_DIR}/c -B ${WORK_DIR}/build-tree-consumer -G ${GENERATOR}
                        -DCMAKE_PREFIX_PATH=${BUILD_DIR} -DCMAKE_C_COMPILER=${C_COMPILER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "Could not find a package configuration file provided by \"rfa\"")
  message(FATAL_ERROR "consumer test: a consumer pointed at the build tree should find no rfa package (${rc}):\n${err}")
endif()

set(languages c cxx)
if(WITH_FORTRAN)
  list(APPEND languages fortran)
endif()
foreach(lang IN LISTS languages)
  # The project is the README's text exactly: copied, not generated.
  set(src ${WORK_DIR}/${lang}-src)
  file(COPY ${BLOCKS_DIR}/${lang}/ DESTINATION ${src})
  run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/${lang}-build -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER}
      "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${lang}-build)
  run(${MPIEXEC} -n 2 ${MPIEXEC_FLAGS} ${WORK_DIR}/${lang}-build/my_app)
  message(STATUS "consumer test: the README's ${lang} project built with find_package(rfa) and ran on 2 ranks")
endforeach()

# The README's C++ program in a project that enables C too (CMake's default languages): its
# mpi.h then needs the C++ MPI library as well as the C one. The project also declares an old
# minimum (3.2, before IN_LIST's policy), where the CMake in use still takes one.
set(src ${WORK_DIR}/c-and-cxx-src)
file(COPY ${BLOCKS_DIR}/cxx/ DESTINATION ${src})
file(READ ${src}/CMakeLists.txt lists)
string(REPLACE "LANGUAGES CXX" "LANGUAGES C CXX" lists "${lists}")
if(NOT lists MATCHES "LANGUAGES C CXX")
  message(FATAL_ERROR "consumer test: the README's C++ project no longer says LANGUAGES CXX")
endif()
if(CMAKE_VERSION VERSION_LESS 4.0)
  string(REGEX REPLACE "cmake_minimum_required\\(VERSION [0-9.]+\\)" "cmake_minimum_required(VERSION 3.2)" lists
                       "${lists}")
endif()
file(WRITE ${src}/CMakeLists.txt "${lists}")
run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/c-and-cxx-build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/c-and-cxx-build)
run(${MPIEXEC} -n 2 ${MPIEXEC_FLAGS} ${WORK_DIR}/c-and-cxx-build/my_app)
message(STATUS "consumer test: the README's C++ program built in a C and C++ project and ran on 2 ranks")

# The Fortran component: asked for by a Fortran project it is rfa::rfa_fortran; by a project
# without Fortran, or of another Fortran compiler, refused with the reason.
if(WITH_FORTRAN)
  set(src ${WORK_DIR}/fortran-component-src)
  file(COPY ${BLOCKS_DIR}/fortran/ DESTINATION ${src})
  file(READ ${src}/CMakeLists.txt lists)
  string(REPLACE "find_package(rfa REQUIRED)" "find_package(rfa REQUIRED COMPONENTS Fortran)" lists "${lists}")
  file(WRITE ${src}/CMakeLists.txt "${lists}")
  run(${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/fortran-component-build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER})
  set(src ${WORK_DIR}/c-asks-fortran-src)
  file(COPY ${BLOCKS_DIR}/c/ DESTINATION ${src})
  file(READ ${src}/CMakeLists.txt lists)
  string(REPLACE "find_package(rfa REQUIRED)" "find_package(rfa REQUIRED COMPONENTS Fortran)" lists "${lists}")
  file(WRITE ${src}/CMakeLists.txt "${lists}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${src} -B ${WORK_DIR}/c-asks-fortran-build -G ${GENERATOR}
                          -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # (CMake wraps the reason's lines: its words are matched a few at a time.)
  if(rc EQUAL 0 OR NOT err MATCHES "Fortran component was asked for" OR NOT err MATCHES "does not[ \n]+enable")
    message(FATAL_ERROR "consumer test: a C project asking for rfa's Fortran component should be told why not (${rc}):\n${err}")
  endif()
  # A project whose Fortran compiler is not the one that compiled the module is told so at
  # find_package (a copy of the install whose package names another compiler).
  set(other ${WORK_DIR}/other-compiler-prefix)
  file(COPY ${prefix}/ DESTINATION ${other})
  file(READ ${other}/lib/cmake/rfa/rfaConfig.cmake package)
  string(REGEX REPLACE "set\\(_rfa_fortran_compiler_id \"[^\"]*\"\\)" "set(_rfa_fortran_compiler_id \"Other\")"
         edited "${package}")
  if(edited STREQUAL package)
    message(FATAL_ERROR "consumer test: rfaConfig.cmake names no Fortran compiler (_rfa_fortran_compiler_id)")
  endif()
  file(WRITE ${other}/lib/cmake/rfa/rfaConfig.cmake "${edited}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/fortran-component-src -B ${WORK_DIR}/other-compiler-build
                          -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${other} -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "compiled by[ \n]+Other" OR NOT err MATCHES "module[ \n]+files")
    message(FATAL_ERROR "consumer test: a Fortran project whose compiler did not compile rfa's module should be "
                        "told so (${rc}):\n${err}")
  endif()
  message(STATUS "consumer test: the Fortran component found by a Fortran project, refused with its reason to a C "
                 "one and to one of another Fortran compiler")
endif()

# Plain compiler use, as the README documents it: mpicc/mpif90 $(pkg-config --cflags --libs ...).
get_filename_component(pc_dir ${pc_files} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
set(wrappers c ${MPICC} rfa my_app.c)
if(WITH_FORTRAN)
  list(APPEND wrappers fortran ${MPIFORT} rfa-fortran my_app.f90)
endif()
separate_arguments(link_flags UNIX_COMMAND "${LINK_FLAGS}")
while(wrappers)
  list(POP_FRONT wrappers lang compiler module source)
  execute_process(COMMAND pkg-config --cflags --libs ${module} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE pc_flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: pkg-config --cflags --libs ${module} failed: ${err}")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  set(exe ${WORK_DIR}/${lang}-pkgconfig)
  run(${compiler} ${BLOCKS_DIR}/${lang}/${source} ${pc_flags} ${link_flags} -o ${exe})
  run(${MPIEXEC} -n 2 ${MPIEXEC_FLAGS} ${exe})
  message(STATUS "consumer test: the README's ${lang} program built with ${compiler} and pkg-config ${module}, ran on 2 ranks")
endwhile()
