#include "server/request_lock_wait.h"

#include <chrono>

namespace tessera {

namespace {

thread_local double lock_wait_seconds = 0;

}  // namespace

std::unique_lock<std::mutex> LockMeasured(std::mutex& mu) {
  std::unique_lock lock(mu, std::try_to_lock);
  if (lock.owns_lock()) return lock;
  const auto start = std::chrono::steady_clock::now();
  lock.lock();
  lock_wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return lock;
}

double TakeLockWaitSeconds() {
  const double s = lock_wait_seconds;
  lock_wait_seconds = 0;
  return s;
}

}  // namespace tessera
