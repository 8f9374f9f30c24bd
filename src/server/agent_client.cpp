#include "server/agent_client.h"

#include <httplib.h>

namespace tessera {

httplib::Client AgentClient(const std::string& url, const AgentClientTls& tls, int read_timeout_s) {
  httplib::Client client = tls.cert_file.empty()
                               ? httplib::Client(url)
                               : httplib::Client(url, tls.cert_file, tls.key_file);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(3, 0);
  client.set_read_timeout(read_timeout_s, 0);
  if (!tls.ca_file.empty()) {
    client.set_ca_cert_path(tls.ca_file.c_str());
    client.enable_server_certificate_verification(true);
  }
  return client;
}

}  // namespace tessera
