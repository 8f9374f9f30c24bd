# The `tessera` command. Subcommands live in src/cli/<name>_command.cpp, one file each. With
# TESSERA_BUILD_LIVE=OFF only the simulator's commands are built (sim, gen, bench schedule and
# the other simulated benches; README "Without the live cluster"), so that they build without
# the store, controller and agent: every other file of src/cli/ is a live one.
file(GLOB cli_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/*.cpp)
set(cli_simulator_names main commands sim_command sim_serving sim_export_replay gen_command
    bench_command up_cluster)
if(NOT TESSERA_BUILD_LIVE)
  list(TRANSFORM cli_simulator_names PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/
       OUTPUT_VARIABLE cli_simulator_srcs)
  list(TRANSFORM cli_simulator_srcs APPEND .cpp)
  set(cli_srcs ${cli_simulator_srcs})
endif()
# The pieces of the CLI that unit tests link (tests/cli/*_test.cpp get tessera_cli).
set(cli_lib_srcs ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/up_cluster.cpp)
list(REMOVE_ITEM cli_srcs ${cli_lib_srcs})
add_library(tessera_cli STATIC ${cli_lib_srcs})
target_include_directories(tessera_cli PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(tessera_cli PUBLIC tessera_sim PRIVATE tessera_warnings)
foreach(part spec store server agent)
  if(TARGET tessera_${part})
    target_link_libraries(tessera_cli PUBLIC tessera_${part})
  endif()
endforeach()
add_executable(tessera ${cli_srcs})
target_include_directories(tessera PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(tessera PRIVATE tessera_cli tessera_sim CLI11::CLI11 fmt::fmt Threads::Threads tessera_warnings)
if(TESSERA_BUILD_LIVE)
  target_compile_definitions(tessera PRIVATE TESSERA_WITH_LIVE=1)
endif()
foreach(part spec store server agent gateway)
  if(TARGET tessera_${part})
    target_link_libraries(tessera PRIVATE tessera_${part})
  endif()
endforeach()
