#include "daemon/push/remote_write.h"

#include <snappy.h>

#include <algorithm>

#include "remote_write.pb.h"

namespace edgemon::push {

LabelSet ExternalLabels(const Identity& id) {
  LabelSet out = {{"job", "edgemon"}};
  auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) out.emplace_back(name, value);
  };
  add("instance", id.host_name);
  add("machine_id", id.host_id);
  add("board_model", id.board_model);
  add("soc", id.soc);
  add("l4t", id.l4t);
  for (const auto& label : id.labels) {
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& l) { return l.first == label.first; });
    if (it != out.end()) {
      it->second = label.second;
    } else {
      out.push_back(label);
    }
  }
  return out;
}

void SortLabels(LabelSet& labels) {
  std::stable_sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) {
    bool an = a.first == "__name__", bn = b.first == "__name__";
    if (an != bn) return an;
    return a.first < b.first;
  });
  labels.erase(std::unique(labels.begin(), labels.end(),
                           [](const auto& a, const auto& b) { return a.first == b.first; }),
               labels.end());
}

SeriesLabels::SeriesLabels(const Inventory& inventory, const LabelSet& external)
    : external_(external) {
  for (metrics::ChannelSeries& s : metrics::PlanSeries(inventory)) {
    entries_.push_back({s.id, s.scale, With(s.name, std::move(s.labels))});
  }
}

LabelSet SeriesLabels::With(std::string_view name, LabelSet own) const {
  // The series' own labels come first, so SortLabels keeps them over an
  // external label of the same name.
  own.emplace(own.begin(), "__name__", std::string(name));
  own.insert(own.end(), external_.begin(), external_.end());
  SortLabels(own);
  // An empty value is no label to Prometheus ({parent=""} matches both).
  std::erase_if(own, [](const auto& l) { return l.second.empty(); });
  return own;
}

std::vector<Series> FrameSeries(const SeriesLabels& plan, std::span<const Frame> frames) {
  std::vector<Series> out;
  for (const SeriesLabels::Entry& e : plan.entries()) {
    Series s;
    for (const Frame& f : frames) {
      if (Value v = f.Get(e.id)) {
        s.samples.emplace_back(f.realtime_ns / 1'000'000,
                               metrics::ScaledValue(e.scale, static_cast<double>(*v)));
      }
    }
    if (s.samples.empty()) continue;
    s.labels = e.labels;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Series> WindowSeries(const SeriesLabels& plan, std::span<const WindowEnergy> windows) {
  std::vector<Series> out;
  for (const WindowEnergy& w : windows) {
    if (!w.window.end_ns) continue;
    for (const RailSummary& r : w.rails) {
      if (!r.energy_mj) continue;
      Series s;
      s.labels =
          plan.With("edgemon_window_energy_joules", {{"window", w.window.label},
                                                     {"window_id", std::to_string(w.window.id)},
                                                     {"rail", r.name}});
      s.samples.emplace_back(*w.window.end_ns / 1'000'000, *r.energy_mj / 1000);
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::string EncodeWriteRequest(std::span<const Series> series) {
  prometheus::WriteRequest req;
  req.mutable_timeseries()->Reserve(static_cast<int>(series.size()));
  for (const Series& s : series) {
    prometheus::TimeSeries* ts = req.add_timeseries();
    ts->mutable_labels()->Reserve(static_cast<int>(s.labels.size()));
    for (const auto& [name, value] : s.labels) {
      prometheus::Label* l = ts->add_labels();
      l->set_name(name);
      l->set_value(value);
    }
    ts->mutable_samples()->Reserve(static_cast<int>(s.samples.size()));
    for (const auto& [t_ms, v] : s.samples) {
      prometheus::Sample* p = ts->add_samples();
      p->set_timestamp(t_ms);
      p->set_value(v);
    }
  }
  return req.SerializeAsString();
}

std::string SnappyCompress(std::string_view data) {
  std::string out;
  snappy::Compress(data.data(), data.size(), &out);
  return out;
}

size_t SampleCount(std::span<const Series> series) {
  size_t n = 0;
  for (const Series& s : series) n += s.samples.size();
  return n;
}

}  // namespace edgemon::push
