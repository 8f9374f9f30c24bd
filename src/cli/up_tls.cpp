#include "cli/up_tls.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace tessera::cli {

namespace {

// Runs openssl with `args`, its output to `log`; an error with that output when it fails.
Status Openssl(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return IoError("cannot start openssl");
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::umask(077);  // keys are created 0600
    ::execvp("openssl", raw.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::ifstream in(log);
  std::stringstream out;
  out << in.rdbuf();
  return FailedPrecondition("openssl " + args.front() +
                            " failed (is Debian's openssl installed?):\n" + out.str());
}

// A key and a certificate signed by the CA: `subject`, extensions `ext` (openssl x509 -extfile).
Status Sign(const std::string& dir, const std::string& name, const std::string& subject,
            const std::string& ext, const std::string& ca_file, const std::string& ca_key,
            const std::string& log) {
  const std::string crt = dir + "/" + name + ".crt", key = dir + "/" + name + ".key";
  const std::string csr = dir + "/" + name + ".csr", ext_file = dir + "/" + name + ".ext";
  std::ofstream(ext_file) << ext;
  if (auto s = Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", key, "-out", csr, "-subj", subject},
                       log);
      !s) {
    return s;
  }
  return Openssl({"x509", "-req", "-in", csr, "-CA", ca_file, "-CAkey", ca_key, "-CAcreateserial",
                  "-out", crt, "-days", "825", "-extfile", ext_file},
                 log);
}

}  // namespace

Result<UpTls> EnsureUpTls(const std::string& state) {
  namespace fs = std::filesystem;
  const std::string dir = state + "/tls";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());
  UpTls out{dir + "/ca.crt",
            dir + "/server.crt",
            dir + "/server.key",
            dir + "/agent.crt",
            dir + "/agent.key",
            dir + "/controller-client.crt",
            dir + "/controller-client.key"};
  const std::string log = dir + "/openssl.log";
  const std::string ca_key = dir + "/ca.key";
  if (!fs::exists(out.ca_file) || !fs::exists(ca_key)) {
    if (auto s = Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key, "-out",
                          out.ca_file, "-days", "3650", "-subj", "/CN=tessera local CA"},
                         log);
        !s) {
      return std::unexpected(s.error());
    }
    // A new CA signs new certificates.
    for (const auto* f : {&out.cert_file, &out.agent_cert_file, &out.client_cert_file})
      fs::remove(*f, ec);
    fs::remove(dir + "/etcd.crt", ec);
  }
  const std::string loopback = "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  struct Wanted {
    const std::string* cert;
    const std::string* key;
    const char* name;
    const char* subject;
    std::string ext;
  };
  for (const Wanted& w : {Wanted{&out.cert_file, &out.key_file, "server", "/CN=tesserad",
                                 loopback + "extendedKeyUsage=serverAuth\n"},
                          Wanted{&out.agent_cert_file, &out.agent_key_file, "agent",
                                 "/CN=tessera-agent", loopback + "extendedKeyUsage=serverAuth\n"},
                          Wanted{&out.client_cert_file, &out.client_key_file, "controller-client",
                                 "/CN=tessera-controller", "extendedKeyUsage=clientAuth\n"}}) {
    if (fs::exists(*w.cert) && fs::exists(*w.key)) continue;
    if (auto s = Sign(dir, w.name, w.subject, w.ext, out.ca_file, ca_key, log); !s)
      return std::unexpected(s.error());
  }
  return out;
}

Status EnsureEtcdTls(const std::string& state, UpTls& tls) {
  const std::string dir = state + "/tls";
  tls.etcd_cert_file = dir + "/etcd.crt";
  tls.etcd_key_file = dir + "/etcd.key";
  if (std::filesystem::exists(tls.etcd_cert_file) && std::filesystem::exists(tls.etcd_key_file))
    return {};
  return Sign(dir, "etcd", "/CN=tessera-etcd",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
              tls.ca_file, dir + "/ca.key", dir + "/openssl.log");
}

}  // namespace tessera::cli
