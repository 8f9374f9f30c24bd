#include "server/process_signals.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tessera {

namespace {

sigset_t Handled() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

ProcessSignals::ProcessSignals() {
  const sigset_t set = Handled();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] {
    const sigset_t wanted = Handled();
    int sig = 0;
    sigwait(&wanted, &sig);
    if (done_.load()) return;
    signalled_.store(true);
    Stop();
  });
}

ProcessSignals::~ProcessSignals() {
  done_.store(true);
  if (!signalled_.load()) ::kill(::getpid(), SIGTERM);  // wakes the thread
  thread_.join();
}

void ProcessSignals::SetStopper(std::function<void()> stopper) {
  bool now = false;
  {
    std::lock_guard lock(mu_);
    stopper_ = std::move(stopper);
    now = stopper_ && stop_requested();
  }
  if (now) Stop();
}

void ProcessSignals::Interrupt() {
  interrupted_.store(true);
  Stop();
}

void ProcessSignals::Stop() {
  std::function<void()> stopper;
  {
    std::lock_guard lock(mu_);
    stopper = stopper_;
  }
  if (stopper) stopper();
}

void ReExecute(char** argv) {
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(fds)) {
      const int fd = std::atoi(e->d_name);
      if (fd > 2) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    ::closedir(fds);
  }
  ::execv("/proc/self/exe", argv);
}

}  // namespace tessera
