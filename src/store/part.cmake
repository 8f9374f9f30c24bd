# tessera_store: durable state behind the Store interface; SqliteStore is the embedded default,
# EtcdStore (with LeaderElection) the one for several controllers, through etcd's JSON gateway
# over cpp-httplib.
find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::CPP_HTTPLIB)
  pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
endif()
tessera_part(store DEPS tessera_core SQLite::SQLite3 PkgConfig::CPP_HTTPLIB
  nlohmann_json::nlohmann_json Threads::Threads)
