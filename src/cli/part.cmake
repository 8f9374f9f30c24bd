# The `tessera` command. Subcommands live in src/cli/<name>_command.cpp, one file each. With
# TESSERA_BUILD_LIVE=OFF the live-cluster commands are left out, so the simulator's commands
# build without the store, controller and agent.
file(GLOB cli_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/cli/*.cpp)
set(cli_live_names up_command down_command submit_command get_command describe_command describe_service
    logs_command cancel_command release_command live_client daemon bench_live_command
    bench_gateway_command bench_gateway_load top_command watch events_view
    completion_command bench_metrics_command up_etcd bench_store_command
    up_credentials up_tls)
if(NOT TESSERA_BUILD_LIVE)
  foreach(name ${cli_live_names})
    list(FILTER cli_srcs EXCLUDE REGEX ".*/${name}\\.cpp$")
  endforeach()
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
