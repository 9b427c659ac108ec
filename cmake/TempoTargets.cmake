# Helpers every component's CMakeLists.txt uses, so tests and benches are declared one way.

# Components to leave out of this build tree (a developer building one part alone).
# Entries name a folder (placement) or a path from the top (tests/policy).
set(TEMPO_SKIP "" CACHE STRING "Component folders to leave out, e.g. placement;tests/policy")

# Add each listed subdirectory. A listed folder without a CMakeLists.txt is a mistake (a
# component renamed or removed and still listed): the configure step fails naming it.
function(tempo_add_subdirectories)
  foreach(dir ${ARGN})
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
      message(FATAL_ERROR "${rel} is listed in ${CMAKE_CURRENT_LIST_FILE} but has no CMakeLists.txt")
    endif()
    if(NOT dir IN_LIST TEMPO_SKIP AND NOT rel IN_LIST TEMPO_SKIP)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()

# Build only what a sanitizer run needs: `unit_tests` (every test) and `concurrent_tests`
# (the tests of concurrent code, also run under TSan).
add_custom_target(unit_tests)
add_custom_target(concurrent_tests)

# tempo_register_test(NAME [LABELS l...]): registers an existing test executable with CTest.
function(tempo_register_test name)
  cmake_parse_arguments(T "" "" "LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "unit;${T_LABELS}" TIMEOUT 600)
  add_dependencies(unit_tests ${name})
  if("concurrent" IN_LIST T_LABELS)
    add_dependencies(concurrent_tests ${name})
  endif()
endfunction()

# tempo_add_test(NAME src... [LABELS l...] [LIBS l...]): a GoogleTest executable run by CTest.
function(tempo_add_test name)
  cmake_parse_arguments(T "" "" "LABELS;LIBS" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE tempo_study GTest::gtest GTest::gmock GTest::gtest_main ${T_LIBS})
  tempo_register_test(${name} LABELS ${T_LABELS})
endfunction()

# tempo_add_bench(NAME src...): a Google Benchmark executable (run by `make bench`).
function(tempo_add_bench name)
  cmake_parse_arguments(B "" "" "LIBS" ${ARGN})
  add_executable(${name} ${B_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE tempo_study benchmark::benchmark ${B_LIBS})
  set_property(GLOBAL APPEND PROPERTY TEMPO_BENCHES ${name})
endfunction()

# tempo_python_test_env(OUT vars...): OUT = vars plus, under ASan, what an uninstrumented
# interpreter needs to load the instrumented library (the ASan runtime first, no leak report
# of the interpreter's own allocations).
function(tempo_python_test_env out)
  set(env ${ARGN})
  if(TEMPO_SANITIZE STREQUAL "address")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                    OUTPUT_VARIABLE libasan OUTPUT_STRIP_TRAILING_WHITESPACE)
    list(APPEND env "LD_PRELOAD=${libasan}" "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()
