// CPU: per-core load from /proc/stat deltas, the online map, and cpufreq.
//
// Load is per-mille of busy jiffies over the interval between two samples,
// so the first sample has none. An offline core is reported as online=0 and
// every other value of it is absent: offline is not 0 %. cpufreq values are
// kHz already. A core coming back online triggers a rediscovery so its
// cpufreq files (absent while it was offline) are opened. Cores of one
// cpufreq policy (cpuN/cpufreq links to the same policyM) show the same
// files: they are read once per tick, by the first online core of the
// policy, and the others get its values.
#include <algorithm>
#include <map>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"

namespace edgemon {
namespace {

constexpr size_t kStatMax = 4 << 20;  // never read more than 4 MiB of /proc/stat
constexpr size_t kMaxCpus = 1024;     // cores given channels

struct Core {
  int cpu = 0;
  ChannelId online = 0;
  ChannelId load = 0;
  std::vector<ScaledFile> freqs;  // freq, freq_min, freq_max
  std::string policy;             // cpuN/cpufreq resolved ("": none, or not shared)
  int policy_id = -1;             // the same policy, numbered at discovery (-1: none)
  FileId online_file = -1;        // cpuN/online, when there is no global list
  bool was_online = true;
  bool have_prev = false;
  parse::CpuTimes prev;
};

class CpuCollector final : public Collector {
 public:
  std::string_view Name() const override { return "cpu"; }

  void Discover(DiscoverContext& ctx) override {
    cores_.clear();
    read_policies_.clear();
    online_parsed_ = false;
    SysFs& fs = ctx.fs();
    const std::string base = SysPath("devices/system/cpu");

    stat_file_ = ctx.Open(ProcPath("stat"));
    std::vector<parse::CpuTimes> times;
    if (auto text = fs.ReadText(ProcPath("stat"), kStatMax)) {
      parse::ProcStatCpus(*text, true, times);
      // Size the per-tick buffer to the cpu section, with room to grow.
      size_t end = 0;
      std::string_view s = *text;
      while (end < s.size() && s.compare(end, 3, "cpu") == 0) {
        auto nl = s.find('\n', end);
        end = nl == std::string_view::npos ? s.size() : nl + 1;
      }
      buf_.resize(std::max<size_t>(4096, end * 2));
    }

    // Which cores exist: the "present" list, else cpuN directories, else
    // the cpuN lines of /proc/stat.
    std::vector<int> cpus;
    if (auto present = ctx.ReadLine(JoinPath(base, "present"))) {
      if (auto list = parse::CpuList(*present)) cpus = *list;
    }
    if (cpus.empty()) {
      for (const auto& name : fs.List(base)) {
        if (name.size() < 4 || name.compare(0, 3, "cpu") != 0) continue;
        auto n = parse::Int(std::string_view(name).substr(3));
        if (n && *n >= 0 && *n < 8192) cpus.push_back(static_cast<int>(*n));
      }
    }
    for (const auto& t : times) {
      if (t.cpu >= 0) cpus.push_back(t.cpu);
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    // A hostile or broken /proc/stat (20,000 cpuN lines) must not grow the
    // inventory without bound: channels are per core.
    if (cpus.size() > kMaxCpus) {
      ctx.Warn("cpu: " + std::to_string(cpus.size()) + " cores listed; keeping the first " +
               std::to_string(kMaxCpus));
      cpus.resize(kMaxCpus);
    }

    online_list_ = ctx.Open(JoinPath(base, "online"));
    std::vector<int> online_now;
    if (auto text = ctx.ReadLine(JoinPath(base, "online"))) {
      online_now = parse::CpuList(*text).value_or(std::vector<int>{});
    }

    if (stat_file_ >= 0) {
      Channel agg;
      agg.kind = Kind::kCpu;
      agg.name = "cpu";
      agg.field = Field::kLoad;
      agg.device = "proc/stat";
      total_load_ = ctx.Add(std::move(agg));
    }

    for (int cpu : cpus) {
      Core core;
      core.cpu = cpu;
      const std::string name = "cpu" + std::to_string(cpu);
      const std::string dir = JoinPath(base, name);
      auto channel = [&](Field field) {
        Channel c;
        c.kind = Kind::kCpu;
        c.name = name;
        c.field = field;
        c.device = name;
        return c;
      };
      if (online_list_ < 0) core.online_file = ctx.Open(JoinPath(dir, "online"));
      core.online = ctx.Add(channel(Field::kOnline));
      core.load = ctx.Add(channel(Field::kLoad));

      const std::string freq = JoinPath(dir, "cpufreq");
      if (auto resolved = fs.Resolve(freq)) core.policy = *resolved;
      std::optional<int64_t> lo = ctx.ReadInt(JoinPath(freq, "cpuinfo_min_freq"));
      std::optional<int64_t> hi = ctx.ReadInt(JoinPath(freq, "cpuinfo_max_freq"));
      auto governor = ctx.ReadLine(JoinPath(freq, "scaling_governor"));
      auto with_limits = [&](Field field) {
        Channel c = channel(field);
        if (lo && *lo > 0) c.min = lo;
        if (hi && *hi > 0) c.max = hi;
        if (governor) c.attrs.emplace_back("governor", *governor);
        return c;
      };
      if (!AddScaled(ctx, with_limits(Field::kFreq), JoinPath(freq, "scaling_cur_freq"), 1, 1,
                     core.freqs)) {
        AddScaled(ctx, with_limits(Field::kFreq), JoinPath(freq, "cpuinfo_cur_freq"), 1, 1,
                  core.freqs);
      }
      AddScaled(ctx, with_limits(Field::kFreqMin), JoinPath(freq, "scaling_min_freq"), 1, 1,
                core.freqs);
      AddScaled(ctx, with_limits(Field::kFreqMax), JoinPath(freq, "scaling_max_freq"), 1, 1,
                core.freqs);

      bool listed = std::any_of(times.begin(), times.end(),
                                [cpu](const parse::CpuTimes& t) { return t.cpu == cpu; });
      core.was_online = online_list_ >= 0
                            ? std::binary_search(online_now.begin(), online_now.end(), cpu)
                            : listed;
      cores_.push_back(std::move(core));
    }
    // Policies by number, so a tick compares ints, not paths.
    for (size_t i = 0; i < cores_.size(); ++i) {
      Core& core = cores_[i];
      if (core.policy.empty()) continue;
      core.policy_id = static_cast<int>(i);
      for (size_t j = 0; j < i; ++j) {
        if (cores_[j].policy == core.policy) {
          core.policy_id = cores_[j].policy_id;
          break;
        }
      }
    }
    have_total_prev_ = false;
  }

  void Sample(SampleContext& ctx) override {
    if (stat_file_ < 0) return;
    bool stat_ok = ReadStat(ctx);

    // The online map: one read of the global list, else per-core files, else
    // "has a /proc/stat line". The list is parsed again only when its text
    // changed.
    bool have_list = false;
    const std::vector<int>& online = online_;
    if (online_list_ >= 0) {
      char text[4096];
      ssize_t n = ctx.fs().Read(online_list_, text, sizeof text);
      if (n > 0) {
        const std::string_view now(text, static_cast<size_t>(n));
        if (!online_parsed_ || now != online_text_) {
          online_text_.assign(now);
          online_parsed_ = true;
          auto list = parse::CpuList(now);
          online_ok_ = list.has_value();
          online_ = list ? std::move(*list) : std::vector<int>{};
        }
        have_list = online_ok_;
      }
    }

    // Policies read this tick: the core whose channels hold their values.
    std::vector<const Core*>& read_policies = read_policies_;
    read_policies.clear();
    for (auto& core : cores_) {
      const parse::CpuTimes* now = Find(core.cpu);
      bool is_online;
      if (have_list) {
        is_online = std::binary_search(online.begin(), online.end(), core.cpu);
      } else if (core.online_file >= 0) {
        auto v = ctx.ReadInt(core.online_file, core.online);
        is_online = v ? *v != 0 : (stat_ok && now != nullptr);
      } else {
        // cpu0 usually has no online file and cannot go offline.
        is_online = !stat_ok || now != nullptr;
      }
      ctx.Set(core.online, is_online ? 1 : 0);
      if (!is_online) {
        core.was_online = false;
        core.have_prev = false;
        continue;
      }
      if (!core.was_online) {
        core.was_online = true;
        ctx.RequestRediscovery();  // its cpufreq directory may exist now
      }
      SampleFreqs(ctx, core, read_policies);
      if (now == nullptr) {
        if (stat_ok) ctx.Fail(core.load, ReadError::kMissing);
        core.have_prev = false;
        continue;
      }
      if (core.have_prev) StoreLoad(ctx, core.load, core.prev, *now);
      core.prev = *now;
      core.have_prev = true;
    }
    if (const parse::CpuTimes* all = stat_ok ? Find(-1) : nullptr) {
      if (have_total_prev_) StoreLoad(ctx, total_load_, total_prev_, *all);
      total_prev_ = *all;
      have_total_prev_ = true;
    }
  }

 private:
  // A core's cpufreq values: read, or copied from a core of the same policy
  // read earlier this tick (the same files in the same order).
  static void SampleFreqs(SampleContext& ctx, const Core& core,
                          std::vector<const Core*>& read_policies) {
    if (core.policy_id >= 0) {
      for (const Core* other : read_policies) {
        if (other->policy_id != core.policy_id || other->freqs.size() != core.freqs.size()) {
          continue;
        }
        for (size_t i = 0; i < core.freqs.size(); ++i) {
          ctx.Copy(other->freqs[i].channel, core.freqs[i].channel);
        }
        return;
      }
      read_policies.push_back(&core);
    }
    SampleScaled(ctx, core.freqs);
  }

  // Reads the cpu section of /proc/stat into times_, growing the buffer when
  // the section does not fit (a large machine, or a 130 KB intr line after it
  // is simply not read).
  bool ReadStat(SampleContext& ctx) {
    for (;;) {
      ssize_t n = ctx.fs().Read(stat_file_, buf_.data(), buf_.size());
      if (n < 0) {
        ctx.Fail(total_load_, ErrorFromErrno(static_cast<int>(-n)));
        return false;
      }
      std::string_view text(buf_.data(), static_cast<size_t>(n));
      bool whole = static_cast<size_t>(n) < buf_.size();
      if (parse::ProcStatCpus(text, whole, times_)) break;
      if (buf_.size() >= kStatMax) break;
      buf_.resize(buf_.size() * 2);
    }
    times_in_order_ = true;
    for (size_t i = 0; i < times_.size() && times_in_order_; ++i) {
      times_in_order_ = times_[i].cpu == static_cast<int>(i) - 1;
    }
    if (times_.empty()) {
      ctx.Fail(total_load_, ReadError::kGarbage);
      return false;
    }
    return true;
  }

  const parse::CpuTimes* Find(int cpu) const {
    // /proc/stat as it usually is ("cpu", cpu0, cpu1, ...): by index.
    if (times_in_order_) {
      const size_t at = static_cast<size_t>(cpu + 1);
      return at < times_.size() ? &times_[at] : nullptr;
    }
    for (const auto& t : times_) {
      if (t.cpu == cpu) return &t;
    }
    return nullptr;
  }

  static void StoreLoad(SampleContext& ctx, ChannelId id, const parse::CpuTimes& prev,
                        const parse::CpuTimes& now) {
    if (now.total < prev.total || now.busy < prev.busy) {
      ctx.Fail(id, ReadError::kRange);  // counters went backwards
      return;
    }
    uint64_t total = now.total - prev.total;
    uint64_t busy = now.busy - prev.busy;
    if (total == 0) return;  // no tick elapsed: no new information, not an error
    if (busy > total) {
      ctx.Fail(id, ReadError::kRange);
      return;
    }
    ctx.Set(id, static_cast<int64_t>((busy * 1000 + total / 2) / total));
  }

  std::vector<Core> cores_;
  FileId stat_file_ = -1;
  FileId online_list_ = -1;
  ChannelId total_load_ = 0;
  std::vector<char> buf_ = std::vector<char>(4096);
  std::vector<parse::CpuTimes> times_;
  bool times_in_order_ = false;  // times_[i] is cpu i - 1 ("cpu" first)
  std::string online_text_;      // the online list as last read, and what it parsed to
  bool online_parsed_ = false;
  bool online_ok_ = false;
  std::vector<int> online_;
  std::vector<const Core*> read_policies_;  // this tick's, kept for its buffer
  parse::CpuTimes total_prev_;
  bool have_total_prev_ = false;
};

}  // namespace

std::unique_ptr<Collector> MakeCpuCollector() {
  return std::make_unique<CpuCollector>();
}

}  // namespace edgemon
