// `tessera up --store etcd --controllers N`: a 3-member etcd cluster on loopback (Debian's
// etcd-server) with its data, pid files and logs in STATE/etcd/, and N controllers on it, one
// leading. The members' ports are picked free once and kept in STATE/etcd/ports, so a stopped
// cluster comes back with the same membership; `tessera down` stops members last.
//
// With TLS (every `tessera up` but --insecure) the members serve clients and peers over HTTPS
// with a certificate from the cluster's local CA (up_tls.h) and require a client certificate
// signed by it from both (etcd's --client-cert-auth, --peer-client-cert-auth): the controllers
// present theirs (tesserad --etcd-cert-file). A cluster keeps the scheme it was created with
// (STATE/etcd/scheme; one made before TLS, without that file, stays on plain HTTP).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cli/up_tls.h"
#include "core/status.h"

namespace tessera::cli {

inline constexpr int kEtcdMembers = 3;

struct EtcdCluster {
  std::string endpoints;                   // the client URLs, comma-separated
  std::vector<std::string> tesserad_args;  // --store etcd --etcd-endpoints ... (and TLS)
};

// Starts the members that are not running (all of them the first time) and waits until the
// cluster has a leader. `tls`: the cluster's certificates (null: plain HTTP, --insecure).
Result<EtcdCluster> StartEtcdCluster(const std::string& state, double timeout_s, const UpTls* tls);
// Stops every member of STATE/etcd; returns how many were running.
int StopEtcdCluster(const std::string& state);

// A port free on 127.0.0.1 at the time of asking.
Result<int> PickFreePort();

// Starts controllers 1..count-1 beside controller 0 (already started from `argv`): the same
// arguments with --port and --endpoint-file their own, pid files STATE/controllers/c<i>.pid.
// Returns their URLs in order.
Result<std::vector<std::string>> StartMoreControllers(std::vector<std::string> argv,
                                                      const std::string& state, int count,
                                                      double timeout_s);
// Stops controllers 1.. of STATE/controllers; returns how many were running.
int StopMoreControllers(const std::string& state);

}  // namespace tessera::cli
