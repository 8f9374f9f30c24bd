// tesserad --store etcd: the life of one controller among several. It serves as a standby
// (standby_server.h) while it campaigns (etcd_election.h: a try whenever the leader key changes,
// which it watches (etcd_watch.h), and every second anyway; the leader key read back for the
// standby's answers), and once it wins, serves as the leader on the same
// port with an EtcdStore fenced on its lease: everything is loaded from etcd, and tasks are
// re-adopted from the agents' heartbeats as after a restart. A term that ends (the lease lost,
// a commit refused by the fence, a commit whose outcome is unknown) stops serving; tesserad
// then re-executes itself so that nothing of the old term's memory survives.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/controller_options.h"
#include "server/process_signals.h"
#include "store/etcd_client.h"
#include "store/store.h"

namespace tessera {

// Set for the re-executed process: the port to serve on again (--port 0 would pick another).
inline constexpr const char* kReexecPortVariable = "TESSERAD_REEXEC_PORT";

// Retries `bind` for up to 3 s while the port is still held (a standby or a former process
// of this controller releasing it).
Result<int> BindRetrying(const std::function<Result<int>()>& bind);

class EtcdServing {
 public:
  struct Options {
    std::vector<std::string> endpoints;
    EtcdTls etcd_tls;  // how the controller reaches etcd (https:// endpoints)
    std::string prefix = "/tessera/";
    int lease_ttl_s = 2;
    std::string listen = "127.0.0.1";
    int port = 0;
    std::string endpoint_file;  // written once the standby listens
    // With both: the standby serves HTTPS, as the leader does (its URL is https://).
    std::string tls_cert_file;
    std::string tls_key_file;
  };
  enum class Outcome { kStopped, kTermEnded, kFailed };
  // Serves the leader's term: the store, its name for logs, the port, the options.
  using ServeLeader =
      std::function<int(Store& store, const std::string& name, int port, ControllerOptions)>;

  EtcdServing(Options options, ProcessSignals& signals);
  Outcome Run(const ServeLeader& serve, ControllerOptions options);

 private:
  Options options_;
  ProcessSignals& signals_;
};

}  // namespace tessera
