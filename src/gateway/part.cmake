# tessera_gateway: the OpenAI-compatible data plane (routing with the serving core, proxying,
# discovery from the controller, replica health, KV events) and the `tessera-gateway` binary.
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::CPP_HTTPLIB)
  pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()
# vLLM's KV events: ZeroMQ PUB/SUB carrying msgpack batches (libzmq3-dev, libmsgpack-dev).
if(NOT TARGET PkgConfig::ZMQ)
  pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET GLOBAL libzmq)
endif()
if(NOT TARGET PkgConfig::MSGPACK)
  pkg_check_modules(MSGPACK REQUIRED IMPORTED_TARGET GLOBAL msgpack)
endif()

tessera_part(gateway DEPS tessera_serve tessera_spec tessera_core PkgConfig::CPP_HTTPLIB
  PkgConfig::ZMQ PkgConfig::MSGPACK Threads::Threads nlohmann_json::nlohmann_json spdlog::spdlog)

add_executable(tessera-gateway ${CMAKE_CURRENT_SOURCE_DIR}/src/gateway/main.cpp)
target_link_libraries(tessera-gateway PRIVATE tessera_gateway CLI11::CLI11 tessera_warnings)
