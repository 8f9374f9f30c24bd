# tessera_server: the controller (REST API, reconcile loop, node liveness, recovery) and the
# `tesserad` daemon. cpp-httplib comes from Debian as a shared library built with OpenSSL,
# zlib and brotli support; its pkg-config flags keep our view of its classes identical.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
# libcrypto for tokens' digests and random secrets (secrets.h); libssl is cpp-httplib's TLS.
find_package(OpenSSL REQUIRED)

# core, sched, spec and store only (DESIGN.md): the queue file reader is spec's.
tessera_part(server DEPS tessera_sched tessera_store tessera_spec tessera_core
  PkgConfig::CPP_HTTPLIB OpenSSL::SSL OpenSSL::Crypto Threads::Threads nlohmann_json::nlohmann_json
  yaml-cpp spdlog::spdlog)

add_executable(tesserad ${CMAKE_CURRENT_SOURCE_DIR}/src/server/main.cpp)
target_link_libraries(tesserad PRIVATE tessera_server CLI11::CLI11 tessera_warnings)
