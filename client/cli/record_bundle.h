// The record bundle on disk: the one writer of summary.json, samples.csv,
// trace.json and report.html, used by edgemon record and edgemon attach (their
// contents are SummaryJson, SamplesCsv and TraceJson in record_report.h, and
// ReportHtml below).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/record_report.h"
#include "client/edgemon_client.h"

namespace edgemon::cli::record {

// Creates the bundle's directory (and its parents); false, with a message on
// stderr, when it cannot.
bool MakeBundleDir(const std::string& dir);

// Reads the stored frames of the report's measured range from the daemon and
// writes summary.json, samples.csv, trace.json and report.html into `dir`; a
// failed read is noted in summary.json, trace.json and report.html, and the
// frames read before it are kept. False, with a message on stderr, when a file cannot be written.
bool WriteBundle(client::Client& c, const std::string& dir, const Report& report,
                 const Inventory& inventory);

// The counter tracks of trace.json: one per rail power (pid 1, W), thermal
// zone (pid 2, C) and CPU/GPU/EMC clock (pid 3, MHz), named uniquely.
struct CounterTrack {
  ChannelId id = 0;
  int pid = 0;
  std::string name;
  std::string unit;                  // the args key
  double scale = 1;                  // value x scale = shown value
  const Channel* channel = nullptr;  // in the inventory passed to CounterTracks
};
std::vector<CounterTrack> CounterTracks(const Inventory& inventory);

// Appends the raw frames of [from, to] to *out, in chunks; on a failed
// query the frames read before it stay in *out.
Status ReadFrames(client::Client& c, int64_t from, int64_t to, std::vector<Frame>* out);

// trace.perfetto-trace: trace.json's tracks and slices in Perfetto's own
// format (proto/perfetto/trace.proto, a subset of Perfetto's TracePacket):
// a ClockSnapshot of this host's REALTIME and BOOTTIME read together, then
// every packet stamped on REALTIME (timestamp_clock_id 1), so Perfetto puts
// it on the same timeline as other traces of the machine. Tracks: "power
// rails (W)", "temperatures (C)", "clocks (MHz)" with a counter track per
// channel (TYPE_COUNTER, double values), "edgemon run" with the run and each
// mark name as slices (energy_j.<rail> annotations), and with --nvtx "NVTX
// ranges", one track per thread (push/pop) and per thread's start/end ranges.
// Each rail's energy in J by rail name: nullopt where the summary has none
// (the trace's annotations and the Chrome trace's args).
std::map<std::string, std::optional<double>> RailEnergyJ(const client::Summary& s);

std::string PerfettoTrace(const Report& report, const std::vector<Frame>& frames,
                          const Inventory& inventory);

// perfetto_manifest.json (Perfetto's trace manifest, version 1): the
// merged timeline of an archive holding it is REALTIME, and
// trace.perfetto-trace is one of its files. Packed into one TAR or ZIP with
// a trace of the same machine whose ts are Unix-epoch microseconds (a
// torch.profiler trace from a Kineto build, trace.json), Perfetto (v58 and
// later) opens them on one timeline.
nlohmann::json PerfettoManifest();

// The data of report.html, the shape the Python client's Result.save() also
// writes (client/python/edgemon/_bundle.py, report_data):
//   {"format": "edgemon-report", "version": 1,
//    "summary": SummaryJson,
//    "phase_rail_trees": [RailTreeJson of each phase, or null without a summary],
//    "series": {"t_s": [seconds of each frame since the range's start],
//               "groups": [{"id": "power"|"temp"|"clock"|"load"|"memory",
//                           "title", "unit",
//                           "scale" (raw x scale = unit),
//                           "lines": [{"name", "values": [raw value or null]}]}]}}
// with one line per rail power, thermal zone and CPU/GPU/EMC clock (the
// trace's counter tracks), then the groups drawn beside power: "load" (the
// GPUs' and the CPUs' aggregate load, %, scale 0.1) and "memory" (RAM in
// use, MiB, scale 1/1024); a null where a frame has no value. With `rails`
// (the rail samples kept at a boosted rate) the power group carries its own
// "t_s" (seconds of each of its points) and its lines the rail samples
// between the frames (MergedSeries); the other groups keep the frames' t_s.
nlohmann::json ReportData(const Report& report, const std::vector<Frame>& frames,
                          const Inventory& inventory, const client::RailSampleSet* rails = nullptr);

// report.html: the template client/report/report.html (compiled in) with
// `data` in its <script type="application/json" id="edgemon-data"> element.
std::string ReportHtml(const nlohmann::json& data);

// `data` as JSON text that cannot end or comment out the <script> element it
// sits in: every '<', '>' and '&' (found only inside strings) written as \u003c,
// \u003e, \u0026, and U+2028/U+2029 as \u2028/\u2029.
std::string ScriptSafeJson(const nlohmann::json& data);

// The template itself.
std::string_view ReportTemplate();

// A page template (report.html, compare.html) with `data` as ScriptSafeJson
// in place of its @EDGEMON_DATA@ slot.
std::string FillTemplate(std::string_view page, const nlohmann::json& data);

// compare.html (client/report/compare.html, compiled in): edgemon compare's
// page, drawn from CompareData (compare.h).
std::string_view CompareTemplate();

}  // namespace edgemon::cli::record
