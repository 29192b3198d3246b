// trace.perfetto-trace of a record bundle: the trace.json content in
// Perfetto's own format (record_bundle.h, PerfettoTrace).
#include <map>

#include "client/cli/record_bundle.h"
#include "edgemon/clock.h"
#include "perfetto/trace.pb.h"

namespace edgemon::cli::record {

namespace {

namespace pp = perfetto::protos;

constexpr uint32_t kSequence = 1;
// Track uuids: the groups, then counter tracks, slice tracks.
constexpr uint64_t kRunGroup = 4, kNvtxGroup = 5;
constexpr uint64_t kCounterBase = 1000, kRunTrack = 100, kMarkBase = 200, kNvtxBase = 10000;

class Writer {
 public:
  pp::TracePacket* Packet() {
    auto* p = trace_.add_packet();
    p->set_trusted_packet_sequence_id(kSequence);
    if (trace_.packet_size() == 1) p->set_sequence_flags(1);  // SEQ_INCREMENTAL_STATE_CLEARED
    return p;
  }
  void Track(uint64_t uuid, uint64_t parent, const std::string& name, bool counter) {
    auto* d = Packet()->mutable_track_descriptor();
    d->set_uuid(uuid);
    if (parent) d->set_parent_uuid(parent);
    d->set_name(name);
    if (counter) d->mutable_counter();
  }
  pp::TrackEvent* Event(int64_t realtime_ns, uint64_t track, pp::TrackEvent::Type type) {
    auto* p = Packet();
    p->set_timestamp(static_cast<uint64_t>(std::max<int64_t>(realtime_ns, 0)));
    p->set_timestamp_clock_id(pp::BUILTIN_CLOCK_REALTIME);
    auto* e = p->mutable_track_event();
    e->set_type(type);
    e->set_track_uuid(track);
    return e;
  }
  void Slice(uint64_t track, const std::string& name, int64_t from, int64_t to,
             const std::map<std::string, std::optional<double>>& args) {
    auto* b = Event(from, track, pp::TrackEvent::TYPE_SLICE_BEGIN);
    b->set_name(name);
    for (const auto& [key, value] : args) {
      if (!value) continue;  // not measured: no annotation, never 0
      auto* a = b->add_debug_annotations();
      a->set_name(key);
      a->set_double_value(*value);
    }
    Event(std::max(to, from), track, pp::TrackEvent::TYPE_SLICE_END);
  }
  std::string Bytes() const { return trace_.SerializeAsString(); }

 private:
  pp::Trace trace_;
};

// The slice's annotations: energy_j.<rail>.
std::map<std::string, std::optional<double>> EnergyAnnotations(const client::Summary& s) {
  std::map<std::string, std::optional<double>> out;
  for (auto& [rail, j] : RailEnergyJ(s)) out["energy_j." + rail] = j;
  return out;
}

}  // namespace

std::string PerfettoTrace(const Report& report, const std::vector<Frame>& frames,
                          const Inventory& inventory) {
  Writer w;
  // The absolute clock: this host's realtime and boottime read together, so
  // Perfetto places the REALTIME stamps below on its own (boottime) timeline
  // and beside any other trace of this machine.
  {
    SystemClock clock;
    auto* snap = w.Packet()->mutable_clock_snapshot();
    auto* real = snap->add_clocks();
    real->set_clock_id(pp::BUILTIN_CLOCK_REALTIME);
    real->set_timestamp(static_cast<uint64_t>(clock.RealtimeNs()));
    auto* boot = snap->add_clocks();
    boot->set_clock_id(pp::BUILTIN_CLOCK_BOOTTIME);
    boot->set_timestamp(static_cast<uint64_t>(clock.BoottimeNs()));
  }
  const char* groups[] = {
      "", "power rails (W)", "temperatures (C)", "clocks (MHz)", "edgemon run", "NVTX ranges"};
  for (uint64_t g = 1; g <= (report.nvtx ? kNvtxGroup : kRunGroup); ++g) {
    w.Track(g, 0, groups[g], false);
  }
  const auto tracks = CounterTracks(inventory);
  for (size_t i = 0; i < tracks.size(); ++i) {
    w.Track(kCounterBase + i, static_cast<uint64_t>(tracks[i].pid), tracks[i].name, true);
  }
  for (const auto& f : frames) {
    for (size_t i = 0; i < tracks.size(); ++i) {
      auto v = f.Get(tracks[i].id);
      if (!v) continue;  // missing: no point, never 0
      w.Event(f.realtime_ns, kCounterBase + i, perfetto::protos::TrackEvent::TYPE_COUNTER)
          ->set_double_counter_value(static_cast<double>(*v) * tracks[i].scale);
    }
  }
  w.Track(kRunTrack, kRunGroup, report.mode == "attach" ? "range" : "run", false);
  auto run_args = EnergyAnnotations(report.summary);
  w.Slice(kRunTrack, report.label.empty() ? report.mode : report.label, report.run_start_ns,
          report.run_end_ns, run_args);
  std::map<std::string, uint64_t> marks;
  for (const auto& p : report.phases) {
    auto [it, added] = marks.emplace(p.name, kMarkBase + marks.size());
    if (added) w.Track(it->second, kRunGroup, "mark " + p.name, false);
    w.Slice(
        it->second, p.name, p.start_ns, p.end_ns.value_or(report.run_end_ns),
        p.summary ? EnergyAnnotations(*p.summary) : std::map<std::string, std::optional<double>>{});
  }
  if (report.nvtx) {
    std::map<std::tuple<int64_t, int64_t, char>, uint64_t> threads;
    for (const auto& r : report.nvtx->ranges) {
      auto [it, added] =
          threads.emplace(std::make_tuple(r.pid, r.tid, r.kind), kNvtxBase + threads.size());
      if (added) {
        w.Track(it->second, kNvtxGroup,
                "pid " + std::to_string(r.pid) + " tid " + std::to_string(r.tid) +
                    (r.kind == 'S' ? " start/end" : ""),
                false);
      }
      w.Slice(it->second, r.name, r.start_ns, r.end_ns,
              {{"energy_j",
                r.energy_mj ? std::optional<double>(*r.energy_mj / 1000.0) : std::nullopt}});
    }
  }
  return w.Bytes();
}

}  // namespace edgemon::cli::record
