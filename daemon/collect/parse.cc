#include "daemon/collect/parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>

namespace edgemon::parse {
namespace {

using text::IsSpace;

// IsSpace for every byte, looked up: the per-tick parsers split a few
// hundred tokens a frame.
const std::array<bool, 256> kSpace = [] {
  std::array<bool, 256> t{};
  for (size_t c = 0; c < t.size(); ++c) t[c] = IsSpace(static_cast<char>(c));
  return t;
}();

bool Space(char c) {
  return kSpace[static_cast<unsigned char>(c)];
}

// Splits off the next line (without its '\n').
std::string_view NextLine(std::string_view& text) {
  auto pos = text.find('\n');
  std::string_view line = text.substr(0, pos);
  text.remove_prefix(pos == std::string_view::npos ? text.size() : pos + 1);
  return line;
}

// Splits off the next whitespace-separated token.
std::string_view NextToken(std::string_view& s) {
  size_t i = 0;
  while (i < s.size() && Space(s[i])) ++i;
  size_t j = i;
  while (j < s.size() && !Space(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

template <typename T>
std::optional<T> Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  T v{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// Number<T>(NextToken(s)) in one pass over the digits: the token is
// consumed whatever it holds; nullopt unless all of it is the number.
template <typename T>
std::optional<T> NextNumber(std::string_view& s) {
  size_t i = 0;
  while (i < s.size() && Space(s[i])) ++i;
  const char* const start = s.data() + i;
  const char* const end = s.data() + s.size();
  const char* p = start;
  if (p != end && *p == '+') ++p;
  T v{};
  auto [ptr, ec] = std::from_chars(p, end, v);
  const char* tok_end = ptr;
  while (tok_end != end && !Space(*tok_end)) ++tok_end;
  s.remove_prefix(static_cast<size_t>(tok_end - s.data()));
  if (p == tok_end || ec != std::errc() || ptr != tok_end) return std::nullopt;
  return v;
}

struct KeyValue {
  std::string_view key;
  std::string_view value;
};

// A "Key: value" line (meminfo, cpuinfo, /proc/PID/status), both sides
// trimmed; nullopt without a colon or with an empty key.
std::optional<KeyValue> SplitKeyValue(std::string_view line) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  KeyValue kv{Trim(line.substr(0, colon)), Trim(line.substr(colon + 1))};
  if (kv.key.empty()) return std::nullopt;
  return kv;
}

// "5120 kB" -> 5120: a size in KiB as procfs prints it; nullopt for another
// unit, none (a page count) or a negative value.
std::optional<int64_t> KbValue(std::string_view value) {
  auto v = NextNumber<int64_t>(value);
  if (!v || *v < 0 || NextToken(value) != "kB") return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::string_view> Words(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t start = s.find_first_not_of(separators);
    if (start == std::string_view::npos) break;
    s.remove_prefix(start);
    size_t end = s.find_first_of(separators);
    out.push_back(s.substr(0, end));
    s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  }
  return out;
}

bool IsUnusedInaLabel(std::string_view label) {
  const std::string l = Lower(Trim(label));
  return l.empty() || l == "nc" || l == "(nc)" || l == "n/c" || l == "sum of shunt voltages";
}

std::optional<int64_t> Int(std::string_view s) {
  return Number<int64_t>(Trim(s));
}
std::optional<int64_t> TimeInStateAboveZero(std::string_view text) {
  int64_t sum = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    auto words = Words(line);
    if (words.empty()) continue;
    if (words.size() != 2) return std::nullopt;
    auto state = Number<int64_t>(words[0]);
    auto ms = Number<int64_t>(words[1]);
    if (!state || !ms || *state < 0 || *ms < 0) return std::nullopt;
    if (*state > 0 && __builtin_add_overflow(sum, *ms, &sum)) return std::nullopt;
  }
  return sum;
}

std::optional<uint64_t> Uint(std::string_view s) {
  return Number<uint64_t>(Trim(s));
}

std::optional<int64_t> LeadingInt(std::string_view s) {
  return Number<int64_t>(NextToken(s));
}

std::optional<std::vector<int>> CpuList(std::string_view s, int max_cpus) {
  s = Trim(s);
  std::vector<int> out;
  if (s.empty()) return out;  // an empty list is valid ("no CPU offline")
  while (!s.empty()) {
    auto comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    s.remove_prefix(comma == std::string_view::npos ? s.size() : comma + 1);
    auto dash = part.find('-');
    auto lo = Number<int>(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : Number<int>(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= max_cpus) return std::nullopt;
    if (out.size() + static_cast<size_t>(*hi - *lo + 1) > static_cast<size_t>(max_cpus)) {
      return std::nullopt;
    }
    for (int c = *lo; c <= *hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool ProcStatCpus(std::string_view text, bool whole_file, std::vector<CpuTimes>& out) {
  out.clear();
  while (!text.empty()) {
    bool last_line = text.find('\n') == std::string_view::npos;
    std::string_view line = NextLine(text);
    if (!line.starts_with("cpu")) return true;   // the cpu section is over
    if (last_line && !whole_file) return false;  // this line may be cut
    std::string_view rest = line;
    std::string_view name = NextToken(rest);
    CpuTimes t;
    if (name.size() > 3) {
      auto n = Number<int>(name.substr(3));
      if (!n || *n < 0) continue;
      t.cpu = *n;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    uint64_t v[8] = {};
    int count = 0;
    for (; count < 8; ++count) {
      auto x = NextNumber<uint64_t>(rest);
      if (!x) break;
      v[count] = *x;
    }
    if (count < 4) continue;  // not a usable line
    uint64_t idle = v[3] + v[4];
    uint64_t busy = 0;
    for (int i : {0, 1, 2, 5, 6, 7}) busy += v[i];
    // Saturating sums: garbage counters must not wrap into plausible values.
    if (busy < v[0] || idle < v[3]) continue;
    t.busy = busy;
    t.total = busy + idle;
    if (t.total < busy) continue;
    out.push_back(t);
  }
  return whole_file;
}

void Meminfo(std::string_view text, std::vector<MeminfoEntry>& out) {
  out.clear();
  while (!text.empty()) {
    auto kv = SplitKeyValue(NextLine(text));
    if (!kv) continue;
    // Page counts (HugePages_*) carry no unit: not a size.
    auto kib = KbValue(kv->value);
    if (kib) out.push_back({kv->key, *kib});
  }
}

void MeminfoValues(std::string_view text, std::span<const std::string_view> keys,
                   std::span<std::optional<int64_t>> out) {
  const size_t n = std::min(keys.size(), out.size());
  while (!text.empty()) {
    auto kv = SplitKeyValue(NextLine(text));
    if (!kv) continue;
    for (size_t i = 0; i < n; ++i) {
      if (kv->key != keys[i]) continue;
      if (auto kib = KbValue(kv->value)) out[i] = kib;
    }
  }
}

ProcStatus ProcPidStatus(std::string_view text) {
  ProcStatus st;
  while (!text.empty() && !(st.rss_kib && st.uid && st.groups)) {
    auto kv = SplitKeyValue(NextLine(text));
    if (!kv) continue;
    if (kv->key == "VmRSS" && !st.rss_kib) {
      if (auto kib = KbValue(kv->value)) st.rss_kib = static_cast<uint64_t>(*kib);
    } else if (kv->key == "Uid" && !st.uid) {
      std::string_view v = kv->value;
      st.uid = Number<uint32_t>(NextToken(v));
    } else if (kv->key == "Groups" && !st.groups) {
      st.groups.emplace();
      std::string_view v = kv->value;
      while (auto gid = Number<uint32_t>(NextToken(v))) st.groups->push_back(*gid);
    }
  }
  return st;
}

std::string ProcPidCmdline(std::string_view text) {
  while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  std::string out(text);
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

std::map<uint32_t, std::string> Passwd(std::string_view text) {
  // name:password:uid:gid:gecos:home:shell
  std::map<uint32_t, std::string> users;
  while (!text.empty()) {
    std::string_view line = Trim(NextLine(text));
    if (line.starts_with("#")) continue;
    auto c1 = line.find(':');
    if (c1 == std::string_view::npos || c1 == 0) continue;
    auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    auto c3 = line.find(':', c2 + 1);
    auto uid = Number<uint32_t>(
        line.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1));
    if (!uid) continue;
    users.emplace(*uid, std::string(line.substr(0, c1)));
  }
  return users;
}

std::optional<LargestFree> BuddyinfoLargestFree(std::string_view text) {
  // "Node 0, zone   Normal    3   5  ...  n10"
  std::array<int64_t, 64> per_order{};
  bool any = false;
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    auto z = line.find("zone");
    if (z == std::string_view::npos) continue;
    std::string_view rest = line.substr(z + 4);
    NextToken(rest);  // zone name
    for (size_t order = 0;; ++order) {
      auto n = NextNumber<int64_t>(rest);
      if (!n || *n < 0 || order >= per_order.size()) break;
      if (per_order[order] > std::numeric_limits<int64_t>::max() - *n) return std::nullopt;
      per_order[order] += *n;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  for (size_t i = per_order.size(); i-- > 0;) {
    if (per_order[i] > 0) return LargestFree{static_cast<int>(i), per_order[i]};
  }
  return LargestFree{0, 0};
}

std::vector<SwapEntry> Swaps(std::string_view text) {
  std::vector<SwapEntry> out;
  Swaps(text, out);
  return out;
}

void Swaps(std::string_view text, std::vector<SwapEntry>& out) {
  out.clear();
  NextLine(text);  // header: Filename Type Size Used Priority
  while (!text.empty()) {
    std::string_view rest = NextLine(text);
    SwapEntry e;
    e.name = std::string(NextToken(rest));
    e.type = std::string(NextToken(rest));
    auto size = NextNumber<int64_t>(rest);
    auto used = NextNumber<int64_t>(rest);
    if (e.name.empty() || !size || !used || *size < 0 || *used < 0) continue;
    e.size_kib = *size;
    e.used_kib = *used;
    out.push_back(std::move(e));
  }
}

std::optional<std::string> L4tRelease(std::string_view text) {
  std::string_view line = NextLine(text);
  auto r = line.find("# R");
  if (r == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(r + 3);
  size_t n = 0;
  while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
  if (n == 0 || n > 4) return std::nullopt;
  std::string out(rest.substr(0, n));
  auto rev = line.find("REVISION:");
  if (rev == std::string_view::npos) return out;
  std::string_view rv = line.substr(rev + 9);
  std::string_view tok = NextToken(rv);
  while (!tok.empty() && (tok.back() == ',')) tok.remove_suffix(1);
  for (char c : tok) {
    if (!((c >= '0' && c <= '9') || c == '.')) return out;
  }
  if (tok.empty() || tok.size() > 16) return out;
  return out + "." + std::string(tok);
}

std::optional<int64_t> NvpmodelStatus(std::string_view text) {
  text = Trim(NextLine(text));
  if (!text.starts_with("pmode:")) return std::nullopt;
  auto v = Number<int64_t>(text.substr(6));
  if (!v || *v < 0) return std::nullopt;
  return v;
}

NvpmodelConf Nvpmodel(std::string_view text) {
  NvpmodelConf conf;
  auto value_of = [](std::string_view line, std::string_view key) -> std::string_view {
    auto p = line.find(key);
    if (p == std::string_view::npos) return {};
    std::string_view rest = line.substr(p + key.size());
    std::string_view tok = NextToken(rest);
    while (!tok.empty() && tok.back() == '>') tok.remove_suffix(1);
    return tok;
  };
  while (!text.empty()) {
    std::string_view line = Trim(NextLine(text));
    if (!line.starts_with("<")) continue;
    if (line.find("POWER_MODEL") != std::string_view::npos) {
      auto id = Number<int64_t>(value_of(line, "ID="));
      std::string_view name = value_of(line, "NAME=");
      if (id && *id >= 0 && !name.empty()) conf.modes.emplace_back(*id, std::string(name));
    } else if (line.find("PM_CONFIG") != std::string_view::npos) {
      auto id = Number<int64_t>(value_of(line, "DEFAULT="));
      if (id && *id >= 0) conf.default_id = *id;
    }
  }
  return conf;
}

std::optional<int64_t> PpDpmCurrentMhz(std::string_view text) {
  while (!text.empty()) {
    std::string_view line = NextLine(text);
    if (line.find('*') == std::string_view::npos) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view rest = line.substr(colon + 1);
    std::string_view tok = NextToken(rest);
    size_t n = 0;
    while (n < tok.size() && tok[n] >= '0' && tok[n] <= '9') ++n;
    auto v = Number<int64_t>(tok.substr(0, n));
    if (!v) continue;
    std::string_view unit = tok.substr(n);
    if (unit == "Mhz" || unit == "MHz") return v;
    if (unit == "Khz" || unit == "KHz" || unit == "kHz") return *v / 1000;
  }
  return std::nullopt;
}

std::vector<std::string> DtStrings(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    auto nul = text.find('\0');
    std::string_view s = text.substr(0, nul);
    text.remove_prefix(nul == std::string_view::npos ? text.size() : nul + 1);
    s = Trim(s);
    if (!s.empty()) out.emplace_back(s);
  }
  return out;
}

std::string CpuModel(std::string_view cpuinfo) {
  std::string_view found[3];  // model name, Hardware, Processor
  while (!cpuinfo.empty()) {
    auto kv = SplitKeyValue(NextLine(cpuinfo));
    if (!kv || kv->value.empty()) continue;
    const std::string_view key = kv->key, val = kv->value;
    if (key == "model name" && found[0].empty()) found[0] = val;
    if (key == "Hardware" && found[1].empty()) found[1] = val;
    if (key == "Processor" && found[2].empty()) found[2] = val;
  }
  for (auto f : found) {
    if (!f.empty()) return std::string(f.substr(0, 256));
  }
  return {};
}

}  // namespace edgemon::parse

namespace edgemon::parse {
namespace {

// "29736K" -> 29736; the kernel prints sizes in KiB with a K suffix.
std::optional<uint64_t> KibToken(std::string_view tok) {
  if (tok.size() < 2 || tok.back() != 'K') return std::nullopt;
  return Number<uint64_t>(tok.substr(0, tok.size() - 1));
}

}  // namespace

std::optional<NvmapMaps> NvmapIovmmMaps(std::string_view text) {
  NvmapMaps out;
  bool header = false, total = false;
  while (!text.empty() && !total) {
    std::string_view line = NextLine(text);
    if (line.empty() || IsSpace(line.front())) continue;  // a handle or mapping row
    std::string_view rest = line;
    std::string_view first = NextToken(rest);
    if (first == "CLIENT") {
      header = true;
      continue;
    }
    if (!header) return std::nullopt;
    if (first == "total") {
      auto kib = KibToken(NextToken(rest));
      if (!kib) return std::nullopt;
      out.total_kib = *kib;
      total = true;
      continue;
    }
    // "<client> <process words...> <pid> <size>K": read from the right.
    std::string_view body = Trim(rest);
    size_t size_at = body.find_last_of(" \t");
    if (size_at == std::string_view::npos) continue;
    auto kib = KibToken(body.substr(size_at + 1));
    body = Trim(body.substr(0, size_at));
    size_t pid_at = body.find_last_of(" \t");
    if (!kib || pid_at == std::string_view::npos) continue;
    auto pid = Number<int>(body.substr(pid_at + 1));
    if (!pid || *pid <= 0) continue;
    std::string_view process = Trim(body.substr(0, pid_at));
    auto it = std::lower_bound(out.clients.begin(), out.clients.end(), *pid,
                               [](const NvmapClient& c, int p) { return c.pid < p; });
    if (it != out.clients.end() && it->pid == *pid) {
      it->kib += *kib;
    } else {
      out.clients.insert(it, NvmapClient{*pid, std::string(process), *kib});
    }
  }
  if (!total) return std::nullopt;
  return out;
}

}  // namespace edgemon::parse
