// tessera-agent: the per-node agent. Registers this node's GPUs (NVML, or --simulate-gpus),
// runs the tasks the controller assigns and reports them.
//
//   tessera-agent --server http://127.0.0.1:7480 --node node-0 --state /var/lib/tessera-agent
//   tessera-agent --server URL --node sim-0 --state DIR --simulate-gpus 8xH100
//   tessera-agent --server URL --node sim --state DIR --simulate-nodes 1000 --simulate-gpus 8xH100
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <thread>

#include "agent/agent.h"

int main(int argc, char** argv) {
  // Keep descriptors 0-2 taken so that no pipe or log lands on them.
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) ::open("/dev/null", O_RDWR);
  }
  CLI::App app{"tessera-agent: runs Tessera tasks on this node"};
  tessera::AgentOptions o;
  std::string simulate, run_as, topology, topology_file;
  bool no_cgroups = false;
  double cpus = 0;
  std::int64_t memory_mib = 0;
  app.add_option("--server", o.server_url,
                 "Controller URL, or several comma-separated (controllers on etcd: the agent "
                 "follows the leader)")
      ->capture_default_str();
  app.add_option("--node", o.node, "Node name ([a-z0-9-]); default: the host name");
  app.add_option("--state", o.state_dir, "State directory (logs, task records)")->required();
  app.add_option("--address", o.address, "Address other nodes reach this one at (MASTER_ADDR)")
      ->capture_default_str();
  app.add_option("--listen", o.listen_host, "Address of the log endpoint")->capture_default_str();
  app.add_option("--port", o.listen_port, "Port of the log endpoint; 0 picks a free one")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--simulate-gpus", simulate, "Simulated GPUs, e.g. 8xH100 (no NVML)");
  app.add_option("--simulate-nodes", o.simulate_nodes,
                 "Emulate N nodes named <node>-0000... in this process, each with "
                 "--simulate-gpus (default 8xH100); tasks still run real processes")
      ->check(CLI::Range(0, 100000));
  app.add_option("--topology", topology,
                 "Where this node sits: LEVEL=DOMAIN,... outermost first, e.g. spine=s1,leaf=l3 "
                 "(the controller's --topology-levels)");
  app.add_option("--topology-file", topology_file,
                 "YAML with this node's place (topology: {LEVEL: DOMAIN}) or, with "
                 "--simulate-nodes, every emulated node's name, GPUs and place (nodes: [...])")
      ->excludes("--topology");
  app.add_option("--run-as", run_as, "Run tasks as this user (never root)");
  app.add_flag("--no-cgroups", no_cgroups, "Do not put tasks in cgroups");
  app.add_option("--cpus", cpus, "CPUs offered (default: all)")->check(CLI::Range(0.0, 4096.0));
  app.add_option("--memory-mib", memory_mib, "Memory offered in MiB (default: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--bootstrap-token-file", o.bootstrap_token_file,
                 "The cluster's bootstrap token: registers this node, which is then issued a "
                 "credential of its own (kept in STATE/credential)");
  app.add_option("--ca-file", o.ca_file,
                 "CA certificate of the controller (for an https --server)");
  app.add_option("--tls-cert-file", o.endpoint_tls.cert_file,
                 "Serve the endpoint (logs, exec, metrics) over HTTPS with this certificate "
                 "(PEM; `tessera up` makes one from its local CA)");
  app.add_option("--tls-private-key-file", o.endpoint_tls.key_file, "The certificate's key (PEM)");
  app.add_option("--client-ca-file", o.endpoint_tls.client_ca,
                 "CA of the controller's client certificate: logs and exec answer only a caller "
                 "with a certificate it signed for --controller-name");
  app.add_option("--controller-name", o.endpoint_tls.controller_cn,
                 "Common name of the controller's client certificate")
      ->capture_default_str();
  app.add_flag("--keep-tasks-on-exit", o.keep_tasks_on_exit,
               "Leave tasks running when the agent stops");
  CLI11_PARSE(app, argc, argv);

  if (o.node.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    for (char* c = host; *c != '\0'; ++c) {
      *c = static_cast<char>(std::isalnum(static_cast<unsigned char>(*c)) ? std::tolower(*c) : '-');
    }
    o.node = host;
  }
  if (!simulate.empty()) o.simulate_gpus = simulate;
  if (!run_as.empty()) o.run_as = run_as;
  if (!topology.empty()) {
    auto place = tessera::ParseTopologyFlag(topology);
    if (!place) {
      std::fprintf(stderr, "tessera-agent: %s\n", place.error().message.c_str());
      return 2;
    }
    o.topology = std::move(*place);
  }
  if (!topology_file.empty()) {
    auto file = tessera::ReadTopologyFile(topology_file);
    if (!file) {
      std::fprintf(stderr, "tessera-agent: %s\n", file.error().message.c_str());
      return 2;
    }
    if (auto s = tessera::ApplyTopologyFile(*file, o); !s) {
      std::fprintf(stderr, "tessera-agent: --topology-file: %s\n", s.error().message.c_str());
      return 2;
    }
  }
  o.cgroups = !no_cgroups;
  o.cpu_milli = static_cast<std::int64_t>(cpus * 1000);
  o.memory_mib = memory_mib;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto agent = tessera::Agent::Create(o);
  if (!agent) {
    std::fprintf(stderr, "tessera-agent: %s\n", agent.error().message.c_str());
    return 2;
  }
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    (*agent)->RequestStop();
  });
  const int code = (*agent)->Run();
  ::kill(::getpid(), SIGTERM);  // release the signal thread if Run ended on its own
  signal_thread.join();
  return code;
}
