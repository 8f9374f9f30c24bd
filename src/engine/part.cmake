# tessera_engine: the simulated inference engine (the serving core's engine model on the wall
# clock behind an OpenAI-compatible API) and the `tessera-engine-sim` binary. spec for the
# OpenAI request parser and the engine profile files.
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

tessera_part(engine DEPS tessera_serve tessera_spec tessera_core PkgConfig::CPP_HTTPLIB
  PkgConfig::ZMQ PkgConfig::MSGPACK Threads::Threads nlohmann_json::nlohmann_json spdlog::spdlog)

add_executable(tessera-engine-sim ${CMAKE_CURRENT_SOURCE_DIR}/src/engine/main.cpp)
target_link_libraries(tessera-engine-sim PRIVATE tessera_engine CLI11::CLI11 tessera_warnings)
