// edgemon record --nvtx: reading the injection library's ranges and their
// energy (record_nvtx.h).
#include "client/cli/record_nvtx.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "client/cli/record_report.h"
#include "edgemon/paths.h"

namespace edgemon::cli::record {

namespace {

template <typename T>
bool Number(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
  }
  return out;
}

std::string Plural(uint64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string ShownDomain(const std::string& domain) {
  return domain.empty() ? "(default)" : domain;
}

std::optional<double> Total(const NvtxStat& s) {
  std::optional<double> total;
  int inputs = 0;
  for (const auto& r : s.rails) {
    if (!r.input) continue;
    ++inputs;
    total = r.energy_mj;
  }
  return inputs == 1 ? total : std::nullopt;
}

}  // namespace

std::vector<NvtxRange> ParseNvtxRanges(std::istream& in, std::vector<std::string>* notes) {
  std::vector<NvtxRange> out;
  uint64_t bad = 0, open = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string_view> f;
    std::string_view rest(line);
    for (size_t at; f.size() < 7 && (at = rest.find('\t')) != std::string_view::npos;) {
      f.push_back(rest.substr(0, at));
      rest.remove_prefix(at + 1);
    }
    f.push_back(rest);
    NvtxRange r;
    if (f.size() != 8 || f[0].size() != 1 || (f[0][0] != 'P' && f[0][0] != 'S') ||
        !Number(f[1], &r.pid) || !Number(f[2], &r.tid) || !Number(f[3], &r.depth) ||
        !Number(f[4], &r.start_ns) || !Number(f[5], &r.end_ns) || r.depth < 0) {
      ++bad;
      continue;
    }
    if (r.end_ns == -1) {
      ++open;
      continue;
    }
    if (r.end_ns < r.start_ns) {
      ++bad;
      continue;
    }
    r.kind = f[0][0];
    r.domain = Unescape(f[6]);
    r.name = Unescape(f[7]);
    out.push_back(std::move(r));
  }
  if (bad) notes->push_back(Plural(bad, "NVTX line") + " that did not parse were left out");
  if (open) {
    notes->push_back(Plural(open, "NVTX range") +
                     " still open when its process or thread ended were left out");
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const NvtxRange& a, const NvtxRange& b) { return a.start_ns < b.start_ns; });
  return out;
}

std::vector<NvtxStat> NvtxStats(std::vector<NvtxRange>& ranges,
                                const std::vector<std::optional<client::Summary>>& summaries) {
  std::vector<NvtxStat> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < ranges.size(); ++i) {
    NvtxRange& r = ranges[i];
    auto [it, added] = index.emplace(std::make_pair(r.domain, r.name), out.size());
    if (added) {
      NvtxStat fresh;
      fresh.domain = r.domain;
      fresh.name = r.name;
      fresh.summarized = true;
      out.push_back(std::move(fresh));
    }
    NvtxStat& s = out[it->second];
    const client::Summary* sum = i < summaries.size() && summaries[i] ? &*summaries[i] : nullptr;
    if (added && sum) {
      for (const auto& rail : sum->rails) s.rails.push_back({rail.name, rail.input, 0.0});
    }
    ++s.count;
    s.total_s += static_cast<double>(r.end_ns - r.start_ns) / 1e9;
    s.max_depth = std::max<uint64_t>(s.max_depth, static_cast<uint64_t>(r.depth));
    if (!sum) {
      s.summarized = false;
      continue;
    }
    r.energy_mj = TotalEnergyMj(sum->rails);
    for (auto& rail : s.rails) {
      auto found = std::find_if(sum->rails.begin(), sum->rails.end(),
                                [&](const client::RailSummary& x) { return x.name == rail.name; });
      if (found == sum->rails.end() || !found->energy_mj || !rail.energy_mj) {
        rail.energy_mj.reset();
      } else {
        *rail.energy_mj += *found->energy_mj;
      }
    }
  }
  for (auto& s : out) {
    if (!s.summarized) {
      for (auto& rail : s.rails) rail.energy_mj.reset();
    }
  }
  return out;
}

NvtxData CollectNvtx(client::Client& c, int fd, const std::string& file, int64_t offset_ns) {
  NvtxData data;
  data.file = file;
  std::string text;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      data.notes.push_back("NVTX ranges not read from " + file + ": " + std::strerror(errno));
      return data;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  if (text.empty()) {
    data.notes.push_back(
        "no NVTX range was recorded: the command made no NVTX call, or loaded NVTX without "
        "NVTX_INJECTION64_PATH");
    return data;
  }
  std::istringstream in(text);
  data.ranges = ParseNvtxRanges(in, &data.notes);
  std::vector<std::optional<client::Summary>> summaries(data.ranges.size());
  uint64_t failed = 0;
  std::string why;
  for (size_t i = 0; i < data.ranges.size(); ++i) {
    NvtxRange& r = data.ranges[i];
    r.start_ns += offset_ns;
    r.end_ns += offset_ns;
    if (i >= kMaxNvtxSummaries) continue;
    auto s = c.Summarize(r.start_ns, NonEmptyEnd(r.start_ns, r.end_ns));
    if (s.ok()) {
      summaries[i] = std::move(s).value();
    } else {
      ++failed;
      why = s.status().ToString();
    }
  }
  if (data.ranges.size() > kMaxNvtxSummaries) {
    data.notes.push_back(Plural(data.ranges.size(), "NVTX range") + ": the first " +
                         std::to_string(kMaxNvtxSummaries) +
                         " were measured; names with later occurrences have no energy");
  }
  if (failed) {
    data.notes.push_back(Plural(failed, "NVTX range") + " not summarized (" + why +
                         "): their names have no energy");
  }
  data.stats = NvtxStats(data.ranges, summaries);
  return data;
}

nlohmann::json NvtxJson(const NvtxData& data) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& s : data.stats) {
    json rails = json::array();
    for (const auto& r : s.rails) {
      rails.push_back(
          {{"name", r.name},
           {"input", r.input},
           {"energy_j", r.energy_mj ? json(*r.energy_mj / 1000.0) : json(nullptr)},
           {"avg_w", r.energy_mj && s.total_s > 0 ? json(*r.energy_mj / 1000.0 / s.total_s)
                                                  : json(nullptr)}});
    }
    auto total = Total(s);
    out.push_back(
        {{"domain", s.domain.empty() ? json(nullptr) : json(s.domain)},
         {"name", s.name},
         {"count", s.count},
         {"total_s", s.total_s},
         {"mean_s", s.count ? s.total_s / static_cast<double>(s.count) : 0.0},
         {"max_depth", s.max_depth},
         {"energy_j", total ? json(*total / 1000.0) : json(nullptr)},
         {"avg_w", total && s.total_s > 0 ? json(*total / 1000.0 / s.total_s) : json(nullptr)},
         {"rails", std::move(rails)}});
  }
  return out;
}

std::string RenderNvtx(const NvtxData& data) {
  if (data.stats.empty()) return "";
  bool domains = false;
  for (const auto& s : data.stats) domains = domains || !s.domain.empty();
  auto shown = [&](const NvtxStat& s) {
    return domains ? ShownDomain(s.domain) + "/" + s.name : s.name;
  };
  size_t width = 12;
  for (const auto& s : data.stats) width = std::max(width, shown(s).size() + 2);
  std::ostringstream o;
  o << "\nNVTX ranges (energy " << kNvtxAttribution << ")\n";
  o << fmt::format("  {:<{}}{:>7}{:>11}{:>11}{:>9}\n", "name", width, "count", "total s", "J",
                   "avg W");
  for (const auto& s : data.stats) {
    std::string name = shown(s);
    auto total = Total(s);
    std::string energy, avg;
    if (total) {
      energy = Fixed(*total / 1000.0, 3);
      avg = s.total_s > 0 ? Fixed(*total / 1000.0 / s.total_s, 3) : "—";
    } else {
      // No single input rail: each top-level rail's energy.
      for (const auto& r : s.rails) {
        energy += (energy.empty() ? "" : ", ") + r.name + " " +
                  (r.energy_mj ? Fixed(*r.energy_mj / 1000.0, 3) : std::string("—"));
      }
      if (energy.empty()) energy = "—";
      avg = "—";
    }
    o << fmt::format("  {:<{}}{:>7}{:>11}{:>11}{:>9}\n", name, width, s.count, Fixed(s.total_s, 3),
                     energy, avg);
  }
  return o.str();
}

std::string NvtxLibrary() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("EDGEMON_NVTX_LIBRARY"); env && *env) {
    return fs::is_regular_file(env, ec) ? fs::absolute(env, ec).string() : "";
  }
  fs::path exe = fs::read_symlink(HostProcPath("self/exe"), ec);
  if (!ec) {
    fs::path built = exe.parent_path().parent_path() / "nvtx" / "libedgemon_nvtx.so";
    if (fs::is_regular_file(built, ec)) return built.string();
  }
#ifdef EDGEMON_NVTX_INSTALLED
  if (fs::is_regular_file(EDGEMON_NVTX_INSTALLED, ec)) return EDGEMON_NVTX_INSTALLED;
#endif
  return "";
}

Result<std::unique_ptr<NvtxCapture>> NvtxCapture::Create(const std::string& bundle_dir) {
  std::unique_ptr<NvtxCapture> c(new NvtxCapture());
  c->library_ = NvtxLibrary();
  if (c->library_.empty()) {
    return Status::InvalidArgument(
        "--nvtx: the NVTX injection library (libedgemon_nvtx.so) is not installed: edgemon was "
        "built without the NVTX v3 headers, or set EDGEMON_NVTX_LIBRARY to its path");
  }
  if (!bundle_dir.empty()) {
    c->file_ = (std::filesystem::path(bundle_dir) / "nvtx-ranges.tsv").string();
    c->fd_ = open(c->file_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/edgemon-nvtx-XXXXXX";
    c->fd_ = mkostemp(templ.data(), O_CLOEXEC);
    c->file_ = templ;
    c->temporary_ = true;
  }
  if (c->fd_ < 0) {
    return Status::Unavailable("--nvtx: cannot create " + c->file_ + ": " + std::strerror(errno));
  }
  return c;
}

NvtxCapture::~NvtxCapture() {
  if (fd_ >= 0) close(fd_);
  if (temporary_) unlink(file_.c_str());
}

void NvtxCapture::AddEnv(std::vector<std::string>& env, std::vector<std::string>* notes) const {
  for (auto it = env.begin(); it != env.end();) {
    if (it->starts_with("NVTX_INJECTION64_PATH=") || it->starts_with("EDGEMON_NVTX_OUT=")) {
      if (it->starts_with("NVTX_INJECTION64_PATH=")) {
        notes->push_back("--nvtx replaced the command's NVTX_INJECTION64_PATH (" +
                         it->substr(it->find('=') + 1) + "): one NVTX tool at a time");
      }
      it = env.erase(it);
    } else {
      ++it;
    }
  }
  env.push_back("NVTX_INJECTION64_PATH=" + library_);
  env.push_back("EDGEMON_NVTX_OUT=" + file_);
}

NvtxData NvtxCapture::Collect(client::Client& c, int64_t offset_ns) const {
  return CollectNvtx(c, fd_, file_, offset_ns);
}

}  // namespace edgemon::cli::record
