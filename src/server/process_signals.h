// tesserad's signals: SIGTERM, SIGINT and SIGHUP are blocked in every thread and taken by one,
// which runs the current stopper (the HTTP server's Stop). Interrupt() runs it too, without a
// signal: an etcd leader whose term ended stops serving that way. SIGPIPE is ignored.
//
// Thread-safety: all methods are thread-safe. Construct before starting any other thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace tessera {

class ProcessSignals {
 public:
  ProcessSignals();
  ~ProcessSignals();
  ProcessSignals(const ProcessSignals&) = delete;
  ProcessSignals& operator=(const ProcessSignals&) = delete;

  // Runs on the next signal or Interrupt() (at once if one came already); null to clear.
  void SetStopper(std::function<void()> stopper);
  void Interrupt();
  bool signalled() const { return signalled_.load(); }
  bool stop_requested() const { return signalled_.load() || interrupted_.load(); }
  // Forgets an Interrupt() (a new term begins).
  void ClearInterrupt() { interrupted_.store(false); }

 private:
  void Stop();
  std::mutex mu_;
  std::function<void()> stopper_;  // under mu_
  std::atomic<bool> signalled_{false};
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Re-executes this program with `argv` (fds above stderr closed across the exec); returns
// only when the exec failed.
void ReExecute(char** argv);

}  // namespace tessera
