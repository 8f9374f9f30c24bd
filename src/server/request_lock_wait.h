// How long the API request a thread serves waited for the controller's lock: the user API takes
// the lock through LockMeasured, and the request logger (metrics_routes.h) takes the sum once
// the request is answered, so /metrics tells a request's lock wait from its own work.
//
// Thread-safety: the sum is per thread (a request is served on one worker thread).
#pragma once

#include <mutex>

namespace tessera {

// Locks `mu`, adding the time it waited for it to this thread's sum.
std::unique_lock<std::mutex> LockMeasured(std::mutex& mu);
// This thread's sum in seconds since the last take; resets it.
double TakeLockWaitSeconds();

}  // namespace tessera
