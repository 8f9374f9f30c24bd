# Fuzz harnesses (docs/fuzzing.md): each tests/fuzz/<name>_fuzz.cpp defines
# LLVMFuzzerTestOneInput and becomes the executable fuzz_<name>, linked with the part
# libraries its "// fuzz-links:" line names (default tessera_sim).
#  - Default build (g++): linked with replay_main.cpp and registered as the CTest test
#    fuzz_<name> (label `fuzz`), which replays tests/fuzz/corpus/<name>/ once.
#  - TESSERA_FUZZ=ON (clang, scripts/fuzz.sh): linked with libFuzzer for coverage-guided runs.
file(GLOB fuzz_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/*_fuzz.cpp)
set(fuzz_targets)
foreach(src ${fuzz_srcs})
  get_filename_component(file_name ${src} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" name ${file_name})
  # The part libraries a harness needs: a "// fuzz-links: tessera_spec" line, else the simulator.
  file(STRINGS ${src} links_line REGEX "^// fuzz-links:" LIMIT_COUNT 1)
  set(libs tessera_sim)
  if(links_line)
    string(REGEX REPLACE "^// fuzz-links:[ ]*" "" libs "${links_line}")
    separate_arguments(libs)
  endif()
  if(NOT TESSERA_BUILD_LIVE AND tessera_server IN_LIST libs)
    continue()
  endif()
  set(target fuzz_${name})
  if(TESSERA_FUZZ)
    add_executable(${target} ${src})
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${target} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/replay_main.cpp)
    add_test(NAME ${target} COMMAND ${target} ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/corpus/${name})
    set_tests_properties(${target} PROPERTIES LABELS fuzz TIMEOUT 120
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  target_link_libraries(${target} PRIVATE ${libs} tessera_warnings)
  list(APPEND fuzz_targets ${target})
endforeach()
add_custom_target(fuzz_harnesses DEPENDS ${fuzz_targets})
