// edgemon record's lease monitor (record_monitor.h).
#include "client/cli/record_monitor.h"

#include <cstdio>
#include <ctime>

#include "client/cli/record_common.h"

namespace edgemon::cli::record {

namespace {

// "12:00:00.123 UTC"
std::string Clock(int64_t ns) {
  std::time_t s = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03d UTC", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ns % 1'000'000'000 / 1'000'000));
  return buf;
}

}  // namespace

LeaseMonitor::LeaseMonitor(const std::string& target, std::chrono::milliseconds timeout,
                           uint32_t rate_hz, uint64_t lease_id, std::string probe_key,
                           int64_t window_id, int64_t window_start_ns)
    : target_(target),
      timeout_(timeout),
      client_(FreshClient(target, timeout)),
      rate_hz_(rate_hz),
      lease_id_(lease_id),
      probe_key_(std::move(probe_key)),
      window_id_(window_id),
      window_start_ns_(window_start_ns) {
  thread_ = std::jthread([this](std::stop_token st) { Run(st); });
}

void LeaseMonitor::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
    // End the lease now (a renewal 1 ms long) rather than at its expiry.
    if (rate_hz_ > 0 && lease_id_ != 0 && client_) (void)client_->Boost(rate_hz_, 1, lease_id_);
  }
}

std::vector<std::string> LeaseMonitor::notes() {
  std::lock_guard lk(mu_);
  std::vector<std::string> out = notes_;
  if (down_since_) out.push_back("the daemon was unreachable from " + Clock(*down_since_) + " on");
  return out;
}

// Renews the window's lease and those of its open marks.
void LeaseMonitor::RenewWindows() {
  (void)client_->RenewWindow(window_id_);
  auto ws = client_->ListWindows(window_start_ns_, 0);
  if (!ws.ok()) return;
  for (const auto& w : *ws) {
    if (!w.end_ns && w.id != window_id_ && MarkName(w.label, window_id_)) {
      (void)client_->RenewWindow(w.id);
    }
  }
}

void LeaseMonitor::Run(std::stop_token st) {
  auto next_boost = std::chrono::steady_clock::now();
  auto next_renewal = std::chrono::steady_clock::now();
  while (!st.stop_requested() && client_) {
    if (std::chrono::steady_clock::now() >= next_renewal) {
      RenewWindows();
      next_renewal =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(kWindowLeaseMs / 4);
    }
    bool ok = true;
    if (rate_hz_ > 0 && std::chrono::steady_clock::now() >= next_boost) {
      auto b = client_->Boost(rate_hz_, kBoostLeaseMs, lease_id_);
      if (b.ok()) {
        effective_ = b->rate_hz;
        lease_id_ = b->lease_id;  // a new one if the daemon lost ours
        next_boost =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(kBoostLeaseMs / 3);
      } else {
        ok = b.status().code() != StatusCode::kUnavailable &&
             b.status().code() != StatusCode::kDeadlineExceeded;
        if (ok) renew_failed_ = true;
      }
    } else {
      auto l = client_->Latest({probe_key_});
      ok = l.ok() || (l.status().code() != StatusCode::kUnavailable &&
                      l.status().code() != StatusCode::kDeadlineExceeded);
    }
    {
      std::lock_guard lk(mu_);
      if (!ok && !down_since_) down_since_ = NowNs();
      if (!ok) {
        if (auto fresh = FreshClient(target_, timeout_)) client_ = std::move(fresh);
      }
      if (ok && down_since_) {
        notes_.push_back("the daemon was unreachable from " + Clock(*down_since_) + " to " +
                         Clock(NowNs()) +
                         " during the run (restarted?): the energy of that gap was not "
                         "measured; the summary covers the data it stored");
        down_since_.reset();
        next_boost = std::chrono::steady_clock::now();  // a restarted daemon lost the lease
      }
    }
    // Wakes at once when stopped: the command's end is not held up.
    std::unique_lock lk(sleep_mu_);
    sleep_cv_.wait_for(lk, st, std::chrono::milliseconds(500), [] { return false; });
  }
}

std::string ProbeKey(const Inventory& inventory) {
  for (const auto& c : inventory.channels) {
    if (!c.name.empty()) return c.Key();
  }
  return "";
}

}  // namespace edgemon::cli::record
