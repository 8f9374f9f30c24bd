# tessera_server: the controller (REST API, reconcile loop, node liveness, recovery) and the
# `tesserad` daemon. cpp-httplib comes from Debian as a shared library built with OpenSSL,
# zlib and brotli support; its pkg-config flags keep our view of its classes identical.
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::CPP_HTTPLIB)
  pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()
# libcrypto for tokens' digests and random secrets (secrets.h); libssl for TLS in the front end.
find_package(OpenSSL REQUIRED)

# core, sched, spec and store only (DESIGN.md): the queue file reader is spec's; tls is the
# OpenSSL helpers it shares with the agent (no other part).
# The dashboard (web/dashboard/) and Chart.js are embedded as generated headers.
tessera_part(server DEPS tessera_sched tessera_store tessera_spec tessera_core tessera_tls
  PkgConfig::CPP_HTTPLIB OpenSSL::SSL OpenSSL::Crypto Threads::Threads nlohmann_json::nlohmann_json
  yaml-cpp spdlog::spdlog tessera_web_assets tessera_dashboard_assets)

add_executable(tesserad ${CMAKE_CURRENT_SOURCE_DIR}/src/server/main.cpp)
target_link_libraries(tesserad PRIVATE tessera_server CLI11::CLI11 tessera_warnings)
