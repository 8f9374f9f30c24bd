// ctest-labels: integration security
// HTTPS in tesserad's own front end (tls_socket.h), on the real binary over loopback: a client
// checking the certificate against its CA is served; 150 connections that never finish their
// TLS handshake (silent, or a few bytes of a ClientHello) neither delay a health check nor
// outlive the header deadline; plain HTTP on the HTTPS port is not served.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "server/loopback_socket.h"
#include "server/process_harness.h"
#include "server/tls_socket.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// True when the server closed `fd` (end of stream or reset) within `ms`.
bool ClosedWithin(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return false;
  char buf[256];
  return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
}

class TlsFrontendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A CA-less self-signed certificate for 127.0.0.1: the client trusts it as its own CA.
    auto cert =
        RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                    "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", dir_.path() + "/server.key", "-out", cert_},
                   30);
    ASSERT_EQ(cert.exit_code, 0) << cert.err;
    pid_ = Spawn({BinDir() + "/tesserad", "--state", dir_.path(), "--port", "0", "--endpoint-file",
                  dir_.path() + "/endpoint", "--insecure", "--header-timeout", "1",
                  "--tls-cert-file", cert_, "--tls-private-key-file", dir_.path() + "/server.key"},
                 dir_.path() + "/tesserad.log");
    ASSERT_TRUE(WaitFor([&] { return !ReadFile(dir_.path() + "/endpoint").empty(); }, 20))
        << ReadFile(dir_.path() + "/tesserad.log");
    url_ = ReadFile(dir_.path() + "/endpoint");
    while (!url_.empty() && url_.back() == '\n') url_.pop_back();
    port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
  }
  void TearDown() override {
    if (pid_ > 0) Stop(pid_);
  }
  int Health(double* seconds = nullptr) {
    httplib::Client c(url_);
    c.set_ca_cert_path(cert_);
    c.enable_server_certificate_verification(true);
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(5, 0);
    const auto start = Clock::now();
    auto r = c.Get("/v1/healthz");
    if (seconds != nullptr) *seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return r ? r->status : 0;
  }

  Watchdog watchdog_{30s, "tls_frontend_test"};
  TempDir dir_{"tessera-tls"};
  std::string cert_ = dir_.path() + "/server.crt";
  pid_t pid_ = -1;
  std::string url_;
  int port_ = 0;
};

TEST_F(TlsFrontendTest, StalledHandshakesNeitherStarveNorOutliveTheDeadline) {
  ASSERT_TRUE(url_.starts_with("https://")) << url_;
  EXPECT_EQ(Health(), 200);
  std::vector<int> stalled;
  // A TLS record header and the start of a ClientHello, then nothing more.
  static constexpr unsigned char kPartialHello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
  for (int i = 0; i < 150; ++i) {
    const int fd = ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    if (i % 3 == 0) ::send(fd, kPartialHello, sizeof kPartialHello, MSG_NOSIGNAL);
    stalled.push_back(fd);
  }
  double seconds = 0;
  EXPECT_EQ(Health(&seconds), 200);
  EXPECT_LT(seconds, 1.0) << "a health check waited behind stalled handshakes";
  // --header-timeout 1: every stalled handshake is closed within the deadline and a sweep.
  int closed = 0;
  const auto deadline = Clock::now() + 3s;
  for (int fd : stalled) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    closed += ClosedWithin(fd, static_cast<int>(std::max<long>(0, left.count())));
    ::close(fd);
  }
  EXPECT_EQ(closed, 150);
}

TEST_F(TlsFrontendTest, PlainHttpOnTheHttpsPortIsNotServed) {
  httplib::Client plain("http://127.0.0.1:" + std::to_string(port_));
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(3, 0);
  auto r = plain.Get("/v1/healthz");
  EXPECT_TRUE(!r || r->status != 200);
  EXPECT_EQ(Health(), 200);  // and the server is none the worse for it
}

// The shared loader (tls/server_context.h) names the flag, the file and OpenSSL's reason.
TEST(TlsContextLoadTest, AFileThatDoesNotLoadIsNamedWithItsFlag) {
  TempDir dir{"tessera-tls-load"};
  const std::string garbage = dir.path() + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  auto missing = TlsContext::Load(dir.path() + "/absent.crt", garbage);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(missing.error().message.starts_with("--tls-cert-file: cannot load " + dir.path() +
                                                  "/absent.crt: "))
      << missing.error().message;
  auto unreadable = TlsContext::Load(garbage, garbage);
  ASSERT_FALSE(unreadable.has_value());
  EXPECT_NE(unreadable.error().message.find("--tls-cert-file: cannot load " + garbage),
            std::string::npos)
      << unreadable.error().message;
}

}  // namespace
}  // namespace tessera::testing
