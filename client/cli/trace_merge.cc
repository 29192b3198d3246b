// edgemon trace merge TRACE.json --out MERGED.json: a Chrome trace written
// by torch.profiler (export_chrome_trace) with edgemond's history over its
// span added on the trace's own clock: counter tracks ("ph":"C") per rail
// power, thermal zone and CPU/GPU/EMC clock (trace.json's tracks, on
// processes no real pid reaches), and energy_j (the board input rail's, null
// without one) plus energy_j_by_rail in the args of every record_function
// range and ProfilerStep#N, each the daemon's summary of the range (as
// `edgemon attach --from --to` gives it). A record_function range is an
// event of category user_annotation or, in a trace without categories
// (PyTorch without Kineto), one whose name has no "::" (operators are aten::).
//
// The trace's clock (client/python/tests/test_torch.py establishes it with a
// known sleep): with Kineto, ts is microseconds on the Unix epoch (realtime,
// the clock of edgemond's history) or counted from baseTimeNanoseconds;
// without it (Debian's PyTorch 1.13, a bare list of events) ts counts from
// the profiler's start, which --start gives (edgemon.torch.trace_start_ns).
// The Python twin is edgemon.torch.merge (client/python/edgemon/torch.py).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/cli/cli.h"
#include "client/cli/record_bundle.h"
#include "client/cli/record_common.h"
#include "client/cli/record_report.h"
#include "edgemon/clock.h"
#include "edgemon/timespec.h"

namespace edgemon::cli::record {

namespace {

// The counter tracks' pids in the merged trace (Linux's pid_max is at most 2^22).
constexpr int64_t kPidBase = int64_t{1} << 30;
// The longest trace read (a torch.profiler trace of a long run is ~100 MB).
constexpr uintmax_t kMaxTraceBytes = uintmax_t{2} << 30;

// ts below this many us count from the profiler's start (about 11.6 days).
constexpr double kRelativeUs = 1e12;

struct MergeOptions {
  std::string trace, out, start;
};

// A string field, "" when absent or not a string (a stranger's file).
std::string Str(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

bool Annotated(const nlohmann::json& e) {
  const auto name = e.find("name");
  if (Str(e, "ph") != "X" || name == e.end() || !name->is_string()) return false;
  const std::string& n = name->get_ref<const std::string&>();
  if (n.starts_with("ProfilerStep#")) return true;
  return e.contains("cat") ? Str(e, "cat") == "user_annotation" : n.find("::") == std::string::npos;
}

std::optional<double> Finite(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "edgemon trace merge: %s\n", TerminalSafe(what).c_str());
  return kExitDataErr;
}

int RunMerge(const Globals& globals, const MergeOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(o.trace, ec);
  if (ec) return Fail(o.trace + ": " + ec.message());
  if (size > kMaxTraceBytes) return Fail(o.trace + ": larger than 2 GiB");
  nlohmann::json doc;
  {
    std::ifstream f(o.trace, std::ios::binary);
    doc = nlohmann::json::parse(f, nullptr, false);
  }
  if (!doc.is_discarded() && doc.is_array()) {
    doc = nlohmann::json{{"traceEvents", std::move(doc)}};  // PyTorch without Kineto
  }
  if (doc.is_discarded() || !doc.is_object()) return Fail(o.trace + " is not a JSON trace");
  auto events = doc.find("traceEvents");
  if (events == doc.end() || !events->is_array()) return Fail(o.trace + " has no traceEvents list");
  int64_t base = 0;  // the Unix ns of ts 0
  auto ns = [&](double us) { return base + static_cast<int64_t>(std::llround(us * 1000.0)); };
  std::optional<double> lo, hi;
  for (const auto& e : *events) {
    if (!e.is_object() || Str(e, "ph") == "M") continue;
    auto ts = Finite(e, "ts");
    if (!ts || std::abs(*ts) > 1e17) continue;  // beyond any clock in us
    double end = *ts + std::max(0.0, Finite(e, "dur").value_or(0.0));
    lo = lo ? std::min(*lo, *ts) : *ts;
    hi = hi ? std::max(*hi, std::min(end, 1e17)) : std::min(end, 1e17);
  }
  if (!lo) return Fail(o.trace + " has no timed event");
  if (auto b = doc.find("baseTimeNanoseconds"); b != doc.end()) {
    if (!b->is_number_integer() || b->get<int64_t>() < 0)
      return Fail("baseTimeNanoseconds is not a count of ns");
    base = b->get<int64_t>();
  } else if (*lo < kRelativeUs) {
    if (o.start.empty()) {
      return Fail(
          "the trace's ts count from the profiler's start (PyTorch without Kineto): give "
          "--start TIME, the Unix time of ts 0 (edgemon.torch.trace_start_ns)");
    }
    auto t = ParseTimeNs(o.start, SystemClock().RealtimeNs());
    if (!t.ok()) return Fail("--start: " + std::string(t.status().message()));
    base = *t;
  }
  const int64_t from = ns(*lo), to = ns(*hi);
  if (from < 1'000'000'000'000'000'000 || to > SystemClock().RealtimeNs() + 86'400'000'000'000) {
    return Fail(
        "the trace's ts are not on the Unix epoch clock (not a torch.profiler trace of "
        "this machine?)");
  }
  auto c = ConnectOrReport(globals);
  if (!c) return kExitUsage;
  auto info = c->DeviceInfo();
  if (!info.ok()) return ReportFirstCall("edgemon trace merge", c->target(), info.status());
  std::vector<Frame> frames;
  std::vector<std::string> notes;
  if (Status read = ReadFrames(*c, from, to, &frames); !read.ok()) {
    notes.push_back("samples not read: " + read.ToString());
  }
  if (frames.empty()) notes.push_back("the daemon holds no frame in the trace's span");
  auto ts_of = [&](int64_t t) { return static_cast<double>(t - base) / 1000.0; };
  nlohmann::json added = nlohmann::json::array();
  const char* names[] = {"", "edgemon power rails (W)", "edgemon temperatures (C)",
                         "edgemon clocks (MHz)"};
  for (int kind = 1; kind <= 3; ++kind) {
    added.push_back({{"ph", "M"},
                     {"pid", kPidBase + kind},
                     {"tid", 0},
                     {"name", "process_name"},
                     {"args", {{"name", names[kind]}}}});
  }
  size_t counters = 0;
  for (const auto& t : CounterTracks(info->inventory)) {
    for (const auto& f : frames) {
      auto v = f.Get(t.id);
      if (!v) continue;  // missing: no point, never 0
      added.push_back(
          {{"ph", "C"},
           {"pid", kPidBase + t.pid},
           {"name", t.name},
           {"ts", ts_of(f.realtime_ns)},
           {"args", {{t.unit, std::round(static_cast<double>(*v) * t.scale * 1000) / 1000}}}});
      ++counters;
    }
  }
  size_t ranges = 0;
  for (auto& e : *events) {
    if (!e.is_object() || !Annotated(e)) continue;
    auto ts = Finite(e, "ts");
    if (!ts) continue;
    const int64_t start = ns(*ts);
    const int64_t end = NonEmptyEnd(start, ns(*ts + std::max(0.0, Finite(e, "dur").value_or(0))));
    auto s = c->Summarize(start, end);
    if (!s.ok()) {
      notes.push_back(Str(e, "name") + ": not summarized: " + s.status().ToString());
      continue;
    }
    if (!e.contains("args") || !e["args"].is_object()) e["args"] = nlohmann::json::object();
    auto total = TotalEnergyMj(s->rails);
    e["args"]["energy_j"] = total ? nlohmann::json(*total / 1000.0) : nlohmann::json(nullptr);
    nlohmann::json by_rail = nlohmann::json::object();
    for (const auto& r : s->rails) {
      by_rail[r.name] =
          r.energy_mj ? nlohmann::json(*r.energy_mj / 1000.0) : nlohmann::json(nullptr);
    }
    e["args"]["energy_j_by_rail"] = std::move(by_rail);
    ++ranges;
  }
  for (auto& a : added) events->push_back(std::move(a));
  if (!doc.contains("otherData") || !doc["otherData"].is_object())
    doc["otherData"] = nlohmann::json::object();
  doc["otherData"]["edgemon"] = {
      {"board", info->inventory.board.model},
      {"from_ns", from},
      {"to_ns", to},
      {"energy", "the board input rail's energy over each range, inclusive of nested ranges"},
      {"notes", notes}};
  std::string out = o.out;
  if (out.empty()) {
    fs::path p(o.trace);
    out = (p.parent_path() / (p.stem().string() + ".edgemon.json")).string();
  }
  const std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << JsonText(doc);
    f.close();
    if (!f) {
      std::fprintf(stderr, "edgemon trace merge: cannot write %s\n", TerminalSafe(tmp).c_str());
      return kExitCantCreate;
    }
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    std::fprintf(stderr, "edgemon trace merge: cannot write %s: %s\n", TerminalSafe(out).c_str(),
                 ec.message().c_str());
    return kExitCantCreate;
  }
  std::fprintf(stderr, "edgemon trace merge: %s: %zu counter points, energy on %zu ranges\n",
               TerminalSafe(out).c_str(), counters, ranges);
  for (const auto& n : notes) std::fprintf(stderr, "Note: %s\n", TerminalSafe(n).c_str());
  return kExitOk;
}

}  // namespace

void AddTraceCommand(CLI::App& app, Registry& registry) {
  auto o = std::make_shared<MergeOptions>();
  auto* trace = app.add_subcommand("trace", "Join edgemon's measurements to a profiler's trace");
  trace->require_subcommand(1);
  auto* merge = trace->add_subcommand(
      "merge",
      "Add power, temperature and clock tracks and energy per range to a torch.profiler trace");
  merge->add_option("trace", o->trace, "The Chrome trace (export_chrome_trace)")->required();
  merge->add_option("--start", o->start,
                    "The Unix time of ts 0 when the trace's ts count from the profiler's start "
                    "(PyTorch without Kineto), e.g. @1764000000.123456");
  merge->add_option("--out", o->out,
                    "Where to write the merged trace (default: TRACE.edgemon.json)");
  merge->callback(
      [&registry, o] { registry.run = [&registry, o] { return RunMerge(registry.globals, *o); }; });
}

}  // namespace edgemon::cli::record
