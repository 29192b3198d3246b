// The bundle of edgemon record/attach: samples.csv, trace.json and
// report.html, and the writer of the four files (record_bundle.h).
#include "client/cli/record_bundle.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "client/cli/cli.h"
#include "client/report/compare_template.h"
#include "client/report/report_template.h"

namespace edgemon::cli::record {

namespace {

// Microseconds since the epoch, the trace-event unit, as the double nearest
// to the exact value (what every JSON reader, Perfetto's included, loads).
double Micros(int64_t ns) {
  return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
}

// A shown value, to 3 decimals.
double Round3(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

nlohmann::json EnergyArgs(const client::Summary& s) {
  nlohmann::json e = nlohmann::json::object();
  for (const auto& [rail, j] : RailEnergyJ(s))
    e[rail] = j ? nlohmann::json(*j) : nlohmann::json(nullptr);
  return e;
}

}  // namespace

std::map<std::string, std::optional<double>> RailEnergyJ(const client::Summary& s) {
  std::map<std::string, std::optional<double>> out;
  for (const auto& r : s.rails) {
    out[r.name] = r.energy_mj ? std::optional<double>(*r.energy_mj / 1000.0) : std::nullopt;
  }
  return out;
}

std::vector<CounterTrack> CounterTracks(const Inventory& inventory) {
  std::vector<CounterTrack> out;
  std::map<std::string, int> seen;
  auto unique = [&](int pid, std::string name, const Channel& c) {
    std::string key = std::to_string(pid) + "/" + name;
    if (seen[key]++ > 0) name += " (" + c.device + ")";
    return name;
  };
  for (const auto& c : inventory.channels) {
    if (c.name.empty() || c.Has(kFlagConstant)) continue;
    if (c.kind == Kind::kRail && c.field == Field::kPower) {
      out.push_back({c.id, 1, unique(1, c.name, c), "W", 1e-3, &c});
    } else if (c.kind == Kind::kThermal && c.field == Field::kTemp) {
      out.push_back({c.id, 2, unique(2, c.name, c), "C", 1e-3, &c});
    } else if (IsClockChannel(c)) {
      out.push_back({c.id, 3, unique(3, c.name, c), "MHz", 1e-3, &c});
    }
  }
  return out;
}

// Appends the raw frames of [from, to] to *out, in chunks; on a failed
// query the frames read before it stay in *out.
Status ReadFrames(client::Client& c, int64_t from, int64_t to, std::vector<Frame>* out) {
  int64_t at = from;
  for (int chunk = 0; chunk < 100 && at <= to; ++chunk) {
    auto q = c.Query(at, to + 1, {}, 0, 100'000);
    if (!q.ok()) return q.status();
    for (auto& f : q->frames) out->push_back(std::move(f));
    if (!q->truncated || q->frames.empty()) break;
    at = out->back().realtime_ns + 1;
  }
  return Status::Ok();
}

namespace {

// The rail samples kept at a boosted rate over [from, to]. The newest of
// them reach the store with the next frame: read again (for up to three
// seconds) until the daemon says the range is complete.
Result<client::RailSampleSet> RailSamples(client::Client& c, int64_t from, int64_t to) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    auto got = c.RailSamples(0, from, to + 1);
    if (!got.ok() || got->complete_to_ns > to || std::chrono::steady_clock::now() >= until) {
      return got;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The column of `key` in `rails`, or -1.
int RailColumn(const client::RailSampleSet* rails, const std::string& key) {
  if (rails == nullptr) return -1;
  auto it = std::find(rails->keys.begin(), rails->keys.end(), key);
  return it == rails->keys.end() ? -1 : static_cast<int>(it - rails->keys.begin());
}

Status WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::Unavailable("cannot write " + p.string() + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

bool MakeBundleDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    std::fprintf(stderr, "edgemon: cannot create the output directory %s: %s\n",
                 TerminalSafe(dir).c_str(), ec ? ec.message().c_str() : "not a directory");
    return false;
  }
  return true;
}

bool WriteBundle(client::Client& c, const std::string& dir, const Report& report,
                 const Inventory& inventory) {
  std::vector<Frame> frames;
  Status read = ReadFrames(c, report.summary.from_ns, report.summary.to_ns, &frames);
  Report r = report;
  if (!read.ok()) r.notes.push_back("samples not read: " + read.ToString());
  client::RailSampleSet rails;
  if (auto got = RailSamples(c, report.summary.from_ns, report.summary.to_ns); got.ok()) {
    rails = std::move(*got);
    if (rails.truncated) {
      r.notes.push_back("rail samples: only the first " + std::to_string(client::kMaxRailSamples) +
                        " of the range were read");
    }
  } else if (got.status().code() != StatusCode::kUnimplemented) {
    // An older daemon keeps none: the frames' readings are all there is.
    r.notes.push_back("rail samples not read: " + got.status().ToString());
  }
  namespace fs = std::filesystem;
  const nlohmann::json summary = SummaryJson(r, inventory);
  Status written = WriteFile(fs::path(dir) / "summary.json", JsonText(summary, 2) + "\n");
  if (written.ok()) {
    written = WriteFile(fs::path(dir) / "samples.csv", SamplesCsv(frames, inventory, &rails));
  }
  if (written.ok()) {
    written = WriteFile(fs::path(dir) / "trace.json", TraceJson(r, frames, inventory, &rails));
  }
  if (written.ok()) {
    written = WriteFile(fs::path(dir) / "report.html",
                        ReportHtml(ReportData(r, frames, inventory, &rails)));
  }
  if (written.ok()) {
    written =
        WriteFile(fs::path(dir) / "trace.perfetto-trace", PerfettoTrace(r, frames, inventory));
  }
  if (written.ok()) {
    written =
        WriteFile(fs::path(dir) / "perfetto_manifest.json", JsonText(PerfettoManifest(), 2) + "\n");
  }
  if (!written.ok()) {
    std::fprintf(stderr, "edgemon: bundle: %s\n", TerminalSafe(written.message()).c_str());
  } else if ((r.items && *r.items > 0) ||
             r.mlperf.asked()) {  // a run with items: its MLPerf report
    (void)WriteMlperfReport((fs::path(dir) / "mlperf_energy.json").string(), summary,
                            r.mlperf_given, r.mlperf);
  }
  return written.ok();
}

std::vector<std::pair<int64_t, int64_t>> MergedSeries(const std::vector<Frame>& frames,
                                                      const Channel& channel,
                                                      const client::RailSampleSet* rails) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int col = RailColumn(rails, channel.Key());
  size_t k = 0;  // the next rail sample
  auto rail_until = [&](int64_t t, bool inclusive) {
    if (col < 0) return;
    const auto& values = rails->values[static_cast<size_t>(col)];
    for (; k < rails->t_ns.size() && (rails->t_ns[k] < t || (inclusive && rails->t_ns[k] == t));
         ++k) {
      if (values[k]) out.emplace_back(rails->t_ns[k], *values[k]);
    }
  };
  for (const auto& f : frames) {
    rail_until(f.realtime_ns, false);
    // A sample at the frame's own time is the frame's reading.
    while (col >= 0 && k < rails->t_ns.size() && rails->t_ns[k] == f.realtime_ns) ++k;
    if (auto v = f.Get(channel.id)) out.emplace_back(f.realtime_ns, *v);
  }
  rail_until(std::numeric_limits<int64_t>::max(), true);
  return out;
}

std::string SamplesCsv(const std::vector<Frame>& frames, const Inventory& inventory,
                       const client::RailSampleSet* rails) {
  std::vector<const Channel*> cols;
  std::vector<int> rail_of;  // per column: its column in `rails`, or -1
  for (const auto& c : inventory.channels) {
    if (c.name.empty() || c.Has(kFlagConstant)) continue;
    const int rc = RailColumn(rails, c.Key());
    bool any = false;
    for (const auto& f : frames) {
      if (f.Get(c.id)) {
        any = true;
        break;
      }
    }
    if (!any && rc >= 0) {
      const auto& vs = rails->values[static_cast<size_t>(rc)];
      any = std::any_of(vs.begin(), vs.end(), [](const Value& v) { return v.has_value(); });
    }
    if (any) {
      cols.push_back(&c);
      rail_of.push_back(rc);
    }
  }
  std::ostringstream o;
  o << "realtime_ns,seq";
  for (const Channel* c : cols) {
    o << "," << CsvField(c->Key() + "[" + std::string(ToString(c->unit)) + "]");
  }
  o << "\n";
  // Rail samples between the frames: rows of their own, without a seq.
  size_t k = 0;
  const size_t n = rails != nullptr ? rails->t_ns.size() : 0;
  auto rail_rows = [&](int64_t before) {
    for (; k < n && rails->t_ns[k] < before; ++k) {
      o << rails->t_ns[k] << ",";
      for (size_t i = 0; i < cols.size(); ++i) {
        o << ",";
        if (rail_of[i] < 0) continue;
        if (const Value& v = rails->values[static_cast<size_t>(rail_of[i])][k]) o << *v;
      }
      o << "\n";
    }
  };
  for (const auto& f : frames) {
    rail_rows(f.realtime_ns);
    while (k < n && rails->t_ns[k] == f.realtime_ns) ++k;  // the frame's own reading
    o << f.realtime_ns << "," << f.seq;
    for (const Channel* c : cols) {
      o << ",";
      if (auto v = f.Get(c->id)) o << *v;
    }
    o << "\n";
  }
  rail_rows(std::numeric_limits<int64_t>::max());
  return o.str();
}

// Each event is one nlohmann::ordered_json object, written to the stream as
// it is made (one per line) rather than kept in one document: an hour at
// 100 ms frames is about a million events, and a DOM of them would take
// hundreds of MB where the stream takes the text alone.
std::string TraceJson(const Report& report, const std::vector<Frame>& frames,
                      const Inventory& inventory, const client::RailSampleSet* rails) {
  using Json = nlohmann::ordered_json;
  std::ostringstream o;
  Json head = {{"displayTimeUnit", "ms"},
               {"otherData",
                {{"generator", "edgemon " + report.mode},
                 {"clock", "realtime (Unix epoch), ts in microseconds"},
                 {"board", report.board_model}}}};
  std::string text = JsonText(head);
  text.pop_back();  // the closing brace: traceEvents follows
  o << text << ",\"traceEvents\":[";
  bool first = true;
  auto emit = [&](const Json& event) {
    o << (first ? "\n" : ",\n") << JsonText(event);
    first = false;
  };
  const char* process_names[] = {"", "power rails (W)", "temperatures (C)", "clocks (MHz)",
                                 "edgemon run"};
  for (int pid = 1; pid <= 4; ++pid) {
    emit({{"ph", "M"},
          {"pid", pid},
          {"tid", 0},
          {"name", "process_name"},
          {"args", {{"name", process_names[pid]}}}});
    emit({{"ph", "M"},
          {"pid", pid},
          {"tid", 0},
          {"name", "process_sort_index"},
          {"args", {{"sort_index", pid}}}});
  }
  for (const auto& t : CounterTracks(inventory)) {
    for (const auto& [at, v] : MergedSeries(frames, *t.channel, rails)) {
      emit({{"ph", "C"},
            {"pid", t.pid},
            {"name", t.name},
            {"ts", Micros(at)},
            {"args", {{t.unit, Round3(static_cast<double>(v) * t.scale)}}}});
    }
  }
  // Slices: the measured range (with --pre/--post), the run, the marks.
  auto slice = [&](int tid, const std::string& name, int64_t from, int64_t to,
                   const nlohmann::json& args) {
    emit({{"ph", "X"},
          {"pid", 4},
          {"tid", tid},
          {"name", name},
          {"ts", Micros(from)},
          {"dur", Micros(std::max<int64_t>(to - from, 0))},
          {"args", args}});
  };
  auto thread = [&](int tid, const std::string& name) {
    emit({{"ph", "M"},
          {"pid", 4},
          {"tid", tid},
          {"name", "thread_name"},
          {"args", {{"name", name}}}});
  };
  thread(1, report.mode == "attach" ? "range" : "run");
  const client::Summary& s = report.summary;
  if (s.from_ns < report.run_start_ns || s.to_ns > report.run_end_ns) {
    slice(1, "measured range", s.from_ns, s.to_ns,
          {{"duration_s", s.duration_s}, {"energy_j", EnergyArgs(s)}});
  }
  nlohmann::json run_args = {{"label", report.label}, {"window_id", report.window_id}};
  if (!report.command.empty()) {
    std::string cmd;
    for (const auto& a : report.command) cmd += (cmd.empty() ? "" : " ") + a;
    run_args["command"] = cmd;
  }
  if (report.exit_code) run_args["exit_code"] = *report.exit_code;
  if (report.signal) run_args["signal"] = *report.signal;
  if (s.from_ns == report.run_start_ns && s.to_ns == report.run_end_ns) {
    run_args["energy_j"] = EnergyArgs(s);
  }
  slice(1, report.label.empty() ? report.mode : report.label, report.run_start_ns,
        report.run_end_ns, run_args);
  std::map<std::string, int> tids;
  for (const auto& p : report.phases) {
    auto [it, added] = tids.emplace(p.name, static_cast<int>(tids.size()) + 2);
    if (added) thread(it->second, "mark " + p.name);
    nlohmann::json args = {{"window_id", p.window_id}};
    if (p.summary) args["energy_j"] = EnergyArgs(*p.summary);
    if (!p.end_ns) args["ended"] = false;
    slice(it->second, p.name, p.start_ns, p.end_ns.value_or(report.run_end_ns), args);
  }
  if (report.nvtx) {
    // NVTX ranges: one track per thread of the command (pid 5).
    emit({{"ph", "M"},
          {"pid", 5},
          {"tid", 0},
          {"name", "process_name"},
          {"args", {{"name", "NVTX ranges"}}}});
    std::map<std::pair<int64_t, int64_t>, int> threads;
    for (const auto& r : report.nvtx->ranges) {
      auto [it, added] = threads.emplace(std::make_pair(r.pid, r.tid), threads.size() + 1);
      if (added) {
        emit({{"ph", "M"},
              {"pid", 5},
              {"tid", it->second},
              {"name", "thread_name"},
              {"args",
               {{"name", "pid " + std::to_string(r.pid) + " tid " + std::to_string(r.tid)}}}});
      }
      nlohmann::json args = {
          {"domain", r.domain.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.domain)},
          {"energy_j",
           r.energy_mj ? nlohmann::json(*r.energy_mj / 1000.0) : nlohmann::json(nullptr)}};
      emit({{"ph", "X"},
            {"pid", 5},
            {"tid", it->second},
            {"name", r.name},
            {"ts", Micros(r.start_ns)},
            {"dur", Micros(r.end_ns - r.start_ns)},
            {"args", args}});
    }
  }
  o << "\n]}\n";
  return o.str();
}

nlohmann::json ReportData(const Report& report, const std::vector<Frame>& frames,
                          const Inventory& inventory, const client::RailSampleSet* rails) {
  using nlohmann::json;
  json t = json::array();
  for (const auto& f : frames) {
    // Seconds to the microsecond: a double holds that exactly for any run.
    t.push_back(static_cast<double>((f.realtime_ns - report.summary.from_ns) / 1000) / 1e6);
  }
  struct Group {
    const char* id;
    const char* title;
    const char* unit;
  };
  const Group kinds[] = {{"", "", ""},
                         {"power", "Power per rail", "W"},
                         {"temp", "Temperatures", "\u00b0C"},
                         {"clock", "Clocks", "MHz"}};
  json groups = json::array();
  const auto tracks = CounterTracks(inventory);
  // Power at the rail samples' times too: every instant any rail has a
  // point, each line null where it has none.
  std::vector<int64_t> power_times;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> power_series;
  const bool rail_points = rails != nullptr && !rails->t_ns.empty();
  if (rail_points) {
    for (const auto& track : tracks) {
      if (track.pid != 1) continue;
      power_series.push_back(MergedSeries(frames, *track.channel, rails));
      for (const auto& p : power_series.back()) power_times.push_back(p.first);
    }
    for (const auto& f : frames) power_times.push_back(f.realtime_ns);
    std::sort(power_times.begin(), power_times.end());
    power_times.erase(std::unique(power_times.begin(), power_times.end()), power_times.end());
  }
  for (int pid = 1; pid <= 3; ++pid) {
    json lines = json::array();
    size_t power_line = 0;
    for (const auto& track : tracks) {
      if (track.pid != pid) continue;
      json values = json::array();
      if (pid == 1 && rail_points) {
        const auto& series = power_series[power_line++];
        size_t j = 0;
        for (int64_t at : power_times) {
          if (j < series.size() && series[j].first == at) {
            values.push_back(series[j++].second);
          } else {
            values.push_back(nullptr);  // missing: a gap, never 0
          }
        }
      } else {
        for (const auto& f : frames) {
          auto v = f.Get(track.id);
          values.push_back(v ? json(*v) : json(nullptr));  // missing: a gap, never 0
        }
      }
      lines.push_back({{"name", track.name}, {"values", std::move(values)}});
    }
    json group = {{"id", kinds[pid].id},
                  {"title", kinds[pid].title},
                  {"unit", kinds[pid].unit},
                  {"scale", 1e-3},
                  {"lines", std::move(lines)}};
    if (pid == 1 && rail_points) {
      json ts = json::array();
      for (int64_t at : power_times) {
        ts.push_back(static_cast<double>((at - report.summary.from_ns) / 1000) / 1e6);
      }
      group["t_s"] = std::move(ts);
    }
    groups.push_back(std::move(group));
  }
  // Drawn beside power (report.html only, not trace.json's tracks): the GPU's
  // and the CPUs' load in %, the memory in use in MiB.
  struct Extra {
    const char* id;
    const char* title;
    const char* unit;
    double scale;
    std::function<bool(const Channel&)> pick;
  };
  const Extra extras[] = {
      {"load", "GPU and CPU load", "%", 0.1,
       [](const Channel& c) {
         return c.field == Field::kLoad &&
                (c.kind == Kind::kGpu || (c.kind == Kind::kCpu && c.name == "cpu"));
       }},
      {"memory", "Memory in use", "MiB", 1.0 / 1024,
       [](const Channel& c) { return c.kind == Kind::kMemory && c.field == Field::kUsed; }},
  };
  for (const auto& e : extras) {
    json lines = json::array();
    for (const auto& c : inventory.channels) {
      if (c.Has(kFlagConstant) || !e.pick(c)) continue;
      json values = json::array();
      for (const auto& f : frames) {
        auto v = f.Get(c.id);
        values.push_back(v ? json(*v) : json(nullptr));  // missing: a gap, never 0
      }
      lines.push_back({{"name", c.name.empty() ? std::string(ToString(c.kind)) : c.name},
                       {"values", std::move(values)}});
    }
    groups.push_back({{"id", e.id},
                      {"title", e.title},
                      {"unit", e.unit},
                      {"scale", e.scale},
                      {"lines", std::move(lines)}});
  }
  json trees = json::array();
  for (const auto& p : report.phases) {
    trees.push_back(p.summary ? RailTreeJson(p.summary->rails, p.summary->duration_s)
                              : json(nullptr));
  }
  return {{"format", "edgemon-report"},
          {"version", 1},
          {"summary", SummaryJson(report, inventory)},
          {"phase_rail_trees", std::move(trees)},
          {"series", {{"t_s", std::move(t)}, {"groups", std::move(groups)}}}};
}

std::string ScriptSafeJson(const nlohmann::json& data) {
  std::string text = JsonText(data);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";  // line separators
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

nlohmann::json PerfettoManifest() {
  return {{"perfetto_manifest",
           {{"version", 1},
            {"trace_time_clock", "REALTIME"},
            {"files", nlohmann::json::array({{{"path", "trace.perfetto-trace"}}})}}}};
}

std::string_view ReportTemplate() {
  return {reinterpret_cast<const char*>(report::kTemplate), report::kTemplateSize};
}

std::string_view CompareTemplate() {
  return {reinterpret_cast<const char*>(report::kCompareTemplate), report::kCompareTemplateSize};
}

std::string ReportHtml(const nlohmann::json& data) {
  return FillTemplate(ReportTemplate(), data);
}

std::string FillTemplate(std::string_view t, const nlohmann::json& data) {
  constexpr std::string_view kSlot = "@EDGEMON_DATA@";
  size_t at = t.find(kSlot);
  if (at == std::string_view::npos) return std::string(t);  // a test checks the slot is there
  std::string out;
  std::string json = ScriptSafeJson(data);
  out.reserve(t.size() + json.size());
  out.append(t.substr(0, at)).append(json).append(t.substr(at + kSlot.size()));
  return out;
}

}  // namespace edgemon::cli::record
