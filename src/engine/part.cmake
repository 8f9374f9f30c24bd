# tessera_engine: `tessera-engine-sim`, a simulated inference engine: the serve/ engine model on
# the wall clock behind an OpenAI-compatible HTTP server (docs/serving.md).
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::CPP_HTTPLIB)
  pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()

tessera_part(engine DEPS tessera_serve tessera_core PkgConfig::CPP_HTTPLIB Threads::Threads
  nlohmann_json::nlohmann_json)

add_executable(tessera-engine-sim ${CMAKE_CURRENT_SOURCE_DIR}/src/engine/main.cpp)
target_link_libraries(tessera-engine-sim PRIVATE tessera_engine tessera_spec CLI11::CLI11
  tessera_warnings)
