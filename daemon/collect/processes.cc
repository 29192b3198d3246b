#include "daemon/collect/processes.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "daemon/collect/parse.h"
#include "edgemon/proc_stat.h"
#include "edgemon/text.h"

namespace edgemon {
namespace {

// Read limits: a stat line is well under 1 KiB, a status under 2 KiB; a
// command line past 4 KiB is cut (as ps cuts it); passwd files are small.
constexpr size_t kStatBytes = 4096;
constexpr size_t kStatusBytes = 16384;
constexpr size_t kCmdlineBytes = 4096;
constexpr size_t kPasswdBytes = 1 << 20;
constexpr uint64_t kMaxPid = 1u << 30;  // above PID_MAX_LIMIT: not a process

}  // namespace

int64_t ClockTicksPerSecond() {
  const long tck = ::sysconf(_SC_CLK_TCK);
  return tck > 0 ? tck : 100;
}

ProcessReader::ProcessReader(SysFs& fs, Clock& clock, int64_t ticks_per_s)
    : fs_(fs), clock_(clock), ticks_per_s_(ticks_per_s > 0 ? ticks_per_s : 100) {}

std::vector<ProcessInfo> ProcessReader::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.MonotonicNs();
  const double dt_s =
      prev_ns_ > 0 && now > prev_ns_ ? static_cast<double>(now - prev_ns_) / 1e9 : 0;
  std::map<uint32_t, std::string> users;
  if (auto pw = fs_.ReadText(EtcPath("passwd"), kPasswdBytes)) users = parse::Passwd(*pw);

  std::map<int, uint64_t> ticks;
  std::vector<ProcessInfo> out;
  for (const std::string& entry : fs_.List(ProcPath(""))) {
    if (!text::AllDigits(entry)) continue;  // not a process directory
    auto pid = parse::Uint(entry);
    if (!pid || *pid == 0 || *pid > kMaxPid) continue;
    const std::string dir = ProcPath(entry);
    auto stat_text = fs_.ReadText(JoinPath(dir, "stat"), kStatBytes);
    if (!stat_text) continue;  // exited meanwhile
    auto stat = ParseProcStat(*stat_text);
    if (!stat) continue;
    ProcessInfo p;
    p.pid = static_cast<int>(*pid);
    p.name = std::move(stat->name);
    p.state = stat->state;
    const uint64_t t = stat->utime + stat->stime;
    ticks[p.pid] = t;
    auto prev = prev_ticks_.find(p.pid);
    if (dt_s > 0 && prev != prev_ticks_.end() && t >= prev->second) {
      const double share =
          static_cast<double>(t - prev->second) / static_cast<double>(ticks_per_s_) / dt_s;
      // Clamped: counters that jump (a reused pid) must not wrap the field.
      p.cpu_permille = static_cast<uint32_t>(std::llround(std::min(share * 1000, 4e9)));
    }
    if (auto status_text = fs_.ReadText(JoinPath(dir, "status"), kStatusBytes)) {
      const parse::ProcStatus status = parse::ProcPidStatus(*status_text);
      p.rss_kib = status.rss_kib;
      if (status.uid) {
        auto u = users.find(*status.uid);
        p.user = u != users.end() ? u->second : std::to_string(*status.uid);
      }
    }
    if (auto cmd = fs_.ReadText(JoinPath(dir, "cmdline"), kCmdlineBytes)) {
      p.command = parse::ProcPidCmdline(*cmd);
    }
    out.push_back(std::move(p));
  }
  prev_ticks_ = std::move(ticks);
  prev_ns_ = now;
  return out;
}

}  // namespace edgemon
