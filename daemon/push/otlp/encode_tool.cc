// edgemon-otlp-encode: samples a root (a fixture board) into frames at a
// fixed period on a fake clock and writes them as one OTLP request, with the
// frames themselves as JSON, so a decoder that is not edgemon's can check
// the wire field by field (tests/daemon/push/otlp_wire_test.py):
//
//   edgemon-otlp-encode --root tests/fixtures/agx-orin --frames 5 --out req.bin
//       --windows-out windows.bin --json frames.json
//
// --absent-every K drops the value of channel c in frame i when
// (c + i) % K == 0, as a failed read would.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/push/otlp.h"

namespace {

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgemon-otlp-encode: a root's frames as one OTLP metrics request"};
  std::string root;
  std::string out_path;
  std::string windows_path;
  std::string json_path;
  int frames_n = 5;
  int64_t period_ms = 1000;
  int64_t start_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
  int absent_every = 0;
  std::vector<std::string> labels;
  app.add_option("--root", root, "Root of the monitored system")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--out", out_path, "Where to write the frames' request")->required();
  app.add_option("--windows-out", windows_path, "Where to write a window request");
  app.add_option("--json", json_path, "Where to write the inventory, frames and windows as JSON");
  app.add_option("--frames", frames_n, "Frames to sample")->check(CLI::Range(1, 100'000));
  app.add_option("--period-ms", period_ms, "Time between frames")->check(CLI::Range(1, 3'600'000));
  app.add_option("--start-ns", start_ns, "CLOCK_REALTIME of the first frame")
      ->check(CLI::PositiveNumber);
  app.add_option("--absent-every", absent_every, "Drop every K-th value (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--label", labels, "A configured label NAME=VALUE (repeatable)");
  CLI11_PARSE(app, argc, argv);

  edgemon::RootedSysFs fs(root);
  edgemon::CollectOptions options;
  options.nvml = false;
  edgemon::Collection collection(fs, edgemon::MakeDefaultCollectors(options), options,
                                 [](const std::string& msg) {
                                   std::fprintf(stderr, "edgemon-otlp-encode: %s\n", msg.c_str());
                                 });
  collection.Discover();
  const edgemon::Inventory& inv = collection.inventory();

  const int64_t period_ns = period_ms * 1'000'000;
  std::vector<edgemon::Frame> frames(static_cast<size_t>(frames_n));
  for (size_t i = 0; i < frames.size(); ++i) {
    edgemon::Frame& f = frames[i];
    f.seq = i + 1;
    f.boottime_ns = 10'000'000'000 + static_cast<int64_t>(i) * period_ns;
    f.realtime_ns = start_ns + static_cast<int64_t>(i) * period_ns;
    collection.Sample(f.boottime_ns, f);
    if (absent_every > 0) {
      for (size_t c = 0; c < f.values.size(); ++c) {
        if ((c + i) % static_cast<size_t>(absent_every) == 0) f.values[c].reset();
      }
    }
  }

  edgemon::push::Identity id;
  id.host_name = "board-7";
  id.host_id = "4c4c4544004d3510";
  id.board_model = inv.board.model;
  id.soc = inv.board.soc;
  id.l4t = inv.board.l4t;
  for (const std::string& l : labels) {
    auto eq = l.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "edgemon-otlp-encode: --label %s: NAME=VALUE expected\n", l.c_str());
      return 2;
    }
    id.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
  }
  edgemon::push::OtlpOptions otlp;
  otlp.counter_start_ns = start_ns - 60'000'000'000;  // the daemon started a minute earlier

  if (!WriteFile(out_path, edgemon::push::EncodeOtlpFrames(inv, frames, id, otlp))) {
    std::fprintf(stderr, "edgemon-otlp-encode: cannot write %s\n", out_path.c_str());
    return 1;
  }

  // Two closed windows over the frames and one still open; each rail's
  // energy is its counter's difference, a rail without both ends has none.
  std::vector<edgemon::push::WindowEnergy> windows;
  for (int w = 0; w < 3; ++w) {
    edgemon::push::WindowEnergy we;
    we.window.id = 40 + w;
    we.window.label = w == 0 ? "resnet50 fp16" : "warm-up";
    we.window.start_ns = frames.front().realtime_ns;
    if (w < 2) we.window.end_ns = frames.back().realtime_ns;
    we.window.abandoned = w == 1;
    for (const edgemon::Channel& c : inv.channels) {
      if (c.kind != edgemon::Kind::kRail || c.field != edgemon::Field::kEnergy) continue;
      edgemon::RailSummary r;
      r.name = c.name;
      r.parent = c.parent;
      r.input = c.Has(edgemon::kFlagInputRail);
      edgemon::Value a = frames.front().Get(c.id);
      edgemon::Value b = frames.back().Get(c.id);
      if (a && b) r.energy_mj = static_cast<double>(*b - *a) + 0.25;
      we.rails.push_back(r);
    }
    windows.push_back(std::move(we));
  }
  if (!windows_path.empty() &&
      !WriteFile(windows_path, edgemon::push::EncodeOtlpWindows(inv, windows, id))) {
    std::fprintf(stderr, "edgemon-otlp-encode: cannot write %s\n", windows_path.c_str());
    return 1;
  }

  if (!json_path.empty()) {
    nlohmann::json j;
    j["identity"] = {{"host_name", id.host_name},
                     {"host_id", id.host_id},
                     {"board_model", id.board_model},
                     {"soc", id.soc},
                     {"l4t", id.l4t},
                     {"labels", id.labels}};
    j["counter_start_ns"] = otlp.counter_start_ns;
    j["channels"] = nlohmann::json::array();
    for (const edgemon::Channel& c : inv.channels) {
      j["channels"].push_back({{"id", c.id},
                               {"kind", edgemon::ToString(c.kind)},
                               {"name", c.name},
                               {"field", edgemon::ToString(c.field)},
                               {"device", c.device},
                               {"parent", c.parent},
                               {"constant", c.Has(edgemon::kFlagConstant)},
                               {"input", c.Has(edgemon::kFlagInputRail)}});
    }
    j["frames"] = nlohmann::json::array();
    for (const edgemon::Frame& f : frames) {
      nlohmann::json values = nlohmann::json::array();
      for (const edgemon::Value& v : f.values) values.push_back(v ? nlohmann::json(*v) : nullptr);
      j["frames"].push_back({{"realtime_ns", f.realtime_ns}, {"values", values}});
    }
    j["windows"] = nlohmann::json::array();
    for (const auto& we : windows) {
      nlohmann::json rails = nlohmann::json::array();
      for (const auto& r : we.rails) {
        rails.push_back({{"name", r.name},
                         {"parent", r.parent},
                         {"input", r.input},
                         {"energy_mj", r.energy_mj ? nlohmann::json(*r.energy_mj) : nullptr}});
      }
      j["windows"].push_back(
          {{"id", we.window.id},
           {"label", we.window.label},
           {"start_ns", we.window.start_ns},
           {"end_ns", we.window.end_ns ? nlohmann::json(*we.window.end_ns) : nullptr},
           {"abandoned", we.window.abandoned},
           {"rails", rails}});
    }
    if (!WriteFile(json_path, j.dump(1))) {
      std::fprintf(stderr, "edgemon-otlp-encode: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
