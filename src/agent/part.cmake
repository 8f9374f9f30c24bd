# tessera_agent: the per-node agent (GPU inventory, process launcher, heartbeats, task logs)
# and the `tessera-agent` executable. NVML is loaded at run time with dlopen, never linked.
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::CPP_HTTPLIB)
  pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()

find_package(OpenSSL REQUIRED)
tessera_part(agent DEPS tessera_spec tessera_core tessera_tls PkgConfig::CPP_HTTPLIB OpenSSL::SSL OpenSSL::Crypto Threads::Threads
  nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})

add_executable(tessera-agent ${CMAKE_CURRENT_SOURCE_DIR}/src/agent/main.cpp)
target_link_libraries(tessera-agent PRIVATE tessera_agent CLI11::CLI11 tessera_warnings)
