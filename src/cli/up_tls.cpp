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

}  // namespace

Result<UpTls> EnsureUpTls(const std::string& state) {
  namespace fs = std::filesystem;
  const std::string dir = state + "/tls";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());
  UpTls out{dir + "/ca.crt", dir + "/server.crt", dir + "/server.key"};
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
    fs::remove(out.cert_file, ec);  // a new CA signs a new certificate
  }
  if (!fs::exists(out.cert_file) || !fs::exists(out.key_file)) {
    const std::string csr = dir + "/server.csr", ext = dir + "/server.ext";
    std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                          "extendedKeyUsage=serverAuth\n";
    if (auto s = Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                          "-nodes", "-keyout", out.key_file, "-out", csr, "-subj", "/CN=tesserad"},
                         log);
        !s) {
      return std::unexpected(s.error());
    }
    if (auto s =
            Openssl({"x509", "-req", "-in", csr, "-CA", out.ca_file, "-CAkey", ca_key,
                     "-CAcreateserial", "-out", out.cert_file, "-days", "825", "-extfile", ext},
                    log);
        !s) {
      return std::unexpected(s.error());
    }
  }
  return out;
}

}  // namespace tessera::cli
