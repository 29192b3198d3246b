// edgemon record's lease monitor: while the command runs, a thread renews
// the run's rail-rate boost lease and the leases of its window and of the
// marks begun inside it, and watches whether the daemon is reachable (a
// daemon that goes away and comes back is noted, and the boost taken again).
//
// Threads: the monitor's own thread talks to the daemon; its public methods
// are called by the thread that made it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "client/edgemon_client.h"

namespace edgemon::cli::record {

// How long one rail-rate boost lasts unless renewed.
inline constexpr uint32_t kBoostLeaseMs = 10'000;

// The boost is this run's own lease (`lease_id`), renewed by its id and ended
// at Stop, so it neither shortens nor outlives other clients' leases.
class LeaseMonitor {
 public:
  // Starts the thread. rate_hz 0: no boost (the daemon is then probed by
  // reading `probe_key`).
  LeaseMonitor(const std::string& target, std::chrono::milliseconds timeout, uint32_t rate_hz,
               uint64_t lease_id, std::string probe_key, int64_t window_id,
               int64_t window_start_ns);
  ~LeaseMonitor() { Stop(); }
  LeaseMonitor(const LeaseMonitor&) = delete;
  LeaseMonitor& operator=(const LeaseMonitor&) = delete;

  // Stops the thread and ends the boost lease now (not at its expiry).
  void Stop();
  // The rail rate the last renewal reported (0: none yet).
  uint32_t effective_rate() const { return effective_.load(); }
  // What happened to the daemon during the run.
  std::vector<std::string> notes();
  // A boost renewal was refused (not for unreachability).
  bool renew_failed() const { return renew_failed_.load(); }

 private:
  void RenewWindows();
  void Run(std::stop_token st);

  const std::string target_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<client::Client> client_;
  const uint32_t rate_hz_;
  uint64_t lease_id_;  // Run's thread, then Stop's after the join
  const std::string probe_key_;
  const int64_t window_id_;
  const int64_t window_start_ns_;
  std::atomic<uint32_t> effective_{0};
  std::atomic<bool> renew_failed_{false};
  std::mutex mu_;
  std::vector<std::string> notes_;     // guarded by mu_
  std::optional<int64_t> down_since_;  // guarded by mu_
  std::mutex sleep_mu_;
  std::condition_variable_any sleep_cv_;
  std::jthread thread_;
};

// The key of a channel to probe the daemon with (the first named one; "" when
// there is none).
std::string ProbeKey(const Inventory& inventory);

}  // namespace edgemon::cli::record
