// The Prometheus exposition of edgemon's channels: a pure function of the
// inventory, the latest frame and the daemon's health counters, rendered in
// the Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
//
// Naming (base units, Prometheus conventions):
//
//   kind/name/field        metric                                  labels
//   rail/*/power           edgemon_rail_power_watts                rail, device, input, parent
//   rail/*/voltage         edgemon_rail_voltage_volts              rail, device, input, parent
//   rail/*/current         edgemon_rail_current_amperes            rail, device, input, parent
//   rail/*/energy          edgemon_rail_energy_joules_total        rail, device, input, parent
//                                                                  (counter)
//   thermal/*/temp         edgemon_temperature_celsius             zone, device
//   cpu/*/freq             edgemon_cpu_frequency_hertz             cpu ("cpu" = all cores)
//   cpu/*/load             edgemon_cpu_load_ratio                  cpu
//   memory/ram/used        edgemon_memory_used_bytes               memory
//   fan/*/duty, speed      edgemon_fan_duty_ratio, edgemon_fan_speed_rpm   fan, device
//   rail/*/current max     edgemon_rail_current_max_amperes        rail, device, input, parent
//   (and crit; power, voltage alike: a rail sensor's limits, where it has them)
//   engine/*/state         edgemon_engine_enabled                  engine, device
//   board/nvpmodel/mode    edgemon_nvpmodel_mode
//   (board identity)       edgemon_board_info 1                    model, soc, l4t, jetpack, ...
//
// and generally edgemon_<kind>_<field>_<unit> with one label named after the
// kind (gpu, emc, swap, devfreq, ...) holding the channel name, plus
// `device` where the channel names one. Scales: mW/mV/mA/mJ/m°C/permille
// divide by 1000, kHz multiplies by 1000, KiB by 1024; values are printed as
// exact decimals of the integers read (5123 mW -> 5.123).
//
// An absent value is omitted (never 0). Channels flagged kFlagConstant (a
// sensor known to report a fixed value) are not exported: they are not
// measurements. Label values are escaped (\\, \", \n) and invalid UTF-8 is
// replaced by U+FFFD; metric names are sanitised to [a-zA-Z0-9_].
//
// Daemon health: edgemon_samples_total, edgemon_energy_samples_total,
// edgemon_deadline_misses_total, edgemon_read_errors_total{channel},
// edgemon_frame_interval_seconds, edgemon_energy_interval_seconds,
// edgemon_last_frame_timestamp_seconds, edgemon_channels,
// edgemon_store_bytes, edgemon_store_max_bytes, edgemon_store_frames (left
// out while the store cannot be read), edgemon_store_damaged (1 once the
// store's file was found damaged, else 0),
// edgemon_store_dropped_frames_total, edgemon_store_failed_commits_total,
// edgemon_build_info{version}; edgemon_process_gpu_memory_bytes{pid,
// process} for the processes using the most GPU memory, where known; and per
// push destination (label destination): edgemon_push_samples_sent_total,
// edgemon_push_samples_retried_total, edgemon_push_samples_failed_total,
// edgemon_push_batches_failed_total, edgemon_push_rollup_gaps_total,
// edgemon_push_backlog_frames, edgemon_push_backlog_age_seconds,
// edgemon_push_last_success_timestamp_seconds,
// edgemon_push_last_error_timestamp_seconds.
//
// Thread safety: an Exposition is immutable after construction; Render may
// be called from any number of threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/channel.h"

namespace edgemon::metrics {

enum class Format {
  kPrometheus,   // text/plain; version=0.0.4
  kOpenMetrics,  // application/openmetrics-text; version=1.0.0
};

// OpenMetrics when the Accept header lists application/openmetrics-text
// (with a q above 0) ahead of or above text/plain; else the 0.0.4 text format.
Format NegotiateFormat(std::string_view accept);
std::string_view ContentType(Format format);

struct StoreHealth {
  int64_t bytes = 0;              // database + WAL on disk
  int64_t max_bytes = 0;          // the configured cap (0 = none)
  std::optional<int64_t> frames;  // raw frames held; unknown while the file cannot be read
  uint64_t dropped_frames = 0;
  uint64_t failed_commits = 0;
  bool damaged = false;  // the file was found damaged (store invariant 13)
};

// One process's GPU memory (the top processes by it, see MetricsSource).
struct ProcessGpuMemory {
  int pid = 0;
  std::string process;  // name, "" when the source gives none
  uint64_t kib = 0;
};

// What the control helper edgemon-control holds, from its state file.
struct ControlHealth {
  uint64_t changes = 0;  // leases granted since boot
  uint64_t leases = 0;   // live now (changes to restore)
};

// One push destination's shipper (daemon/push), as /metrics exports it.
struct PushHealth {
  std::string destination;       // the URL without user info, query or fragment
  uint64_t samples_sent = 0;     // acknowledged by the receiver (2xx)
  uint64_t samples_retried = 0;  // sent again after a 429, 5xx or network error
  uint64_t samples_failed = 0;   // refused for good (another 4xx): moved past
  uint64_t batches_failed = 0;
  uint64_t rollup_gaps = 0;                // times the cursor fell behind the raw frames
  std::optional<int64_t> backlog_frames;   // stored frames not yet acknowledged
  std::optional<int64_t> backlog_age_ns;   // age of the oldest of them
  std::optional<int64_t> last_success_ns;  // wall clock of the last 2xx
  std::optional<int64_t> last_error_ns;    // wall clock of the last failure
  // Not on /metrics (DeviceInfo.push and the health service carry them):
  std::string protocol;                     // "remote-write" | "otlp"
  std::string last_error;                   // what the last failure said
  std::optional<int64_t> failing_since_ns;  // first failure since the last 2xx
  bool stalled = false;                     // failing for kStalledAfterNs (shipper.h)
};

// The daemon's own counters; every field is optional (absent: not exported).
struct Health {
  std::string version;
  std::optional<uint64_t> frames;
  std::optional<uint64_t> energy_samples;
  std::optional<uint64_t> deadline_misses;
  std::optional<int64_t> frame_period_ns;
  std::optional<int64_t> energy_period_ns;
  std::span<const uint64_t> read_errors;  // by channel id; empty: not exported
  std::optional<StoreHealth> store;
  std::optional<ControlHealth> control;  // absent: no helper state file
  // edgemon_process_gpu_memory_bytes{pid,process}; empty: not exported.
  std::span<const ProcessGpuMemory> gpu_processes;
  // One per configured push destination; empty: not exported.
  std::span<const PushHealth> push;
};

// Escapes a label value for both text formats (\\, \", \n) and replaces
// invalid UTF-8 with U+FFFD.
std::string EscapeLabelValue(std::string_view v);
// Maps anything to a valid metric name fragment: [a-zA-Z0-9_], not starting
// with a digit (a leading digit gets a '_' in front).
std::string SanitizeName(std::string_view s);
// value / 10^3 (shift = -3), value * 1000 or * 1024, as an exact decimal.
std::string FormatMilli(int64_t v);

// How a channel's integer becomes a value in the series' base unit: as it
// is, / 1000 (mW, mV, mA, mJ, m°C, per-mille), * 1000 (kHz), * 1024 (KiB).
enum class Scale : uint8_t { kOne, kMilli, kKilo, kKibi };
enum class MetricType : uint8_t { kGauge, kCounter };

// One channel's series as /metrics exposes it, and as the push shipper
// (daemon/push) sends it: the one place the naming above is decided.
struct ChannelSeries {
  ChannelId id = 0;
  std::string family;  // the metric family (without _total)
  std::string name;    // the sample's name: the family, + "_total" for a counter
  std::string unit;    // OpenMetrics UNIT ("" when the name carries none)
  std::string help;
  MetricType type = MetricType::kGauge;
  Scale scale = Scale::kOne;
  // (name, value) as read from the channel, unescaped, in exposition order.
  std::vector<std::pair<std::string, std::string>> labels;
};

// Every exported channel of `inventory`, in inventory order; channels
// flagged kFlagConstant are left out.
std::vector<ChannelSeries> PlanSeries(const Inventory& inventory);
// `v` (a channel's integer, or an average of them) in the series' base unit.
double ScaledValue(Scale scale, double v);

// The rendering plan of one inventory: families, escaped label sets and
// scales are worked out once; Render only formats values.
class Exposition {
 public:
  explicit Exposition(const Inventory& inventory);

  // `frame` may be null (before the first frame): channel metrics are then
  // left out and only the board info, rails' limits and health are rendered.
  std::string Render(const Frame* frame, const Health& health, Format format) const;

  size_t families() const { return families_.size(); }

 private:
  struct Sample {
    ChannelId id;
    std::string labels;  // "{rail=\"VDD_IN\",device=\"...\"}" or ""
  };
  struct Family {
    std::string name;  // without _total for counters
    std::string unit;  // OpenMetrics UNIT ("" when the name carries none)
    std::string help;
    MetricType type = MetricType::kGauge;
    Scale scale = Scale::kOne;
    std::vector<Sample> samples;
  };

  // A rail's sensor limits (Channel::max and ::crit: the INA3221's warning
  // and critical current, hwmon's _max and _crit), constants of the
  // inventory rendered with or without a frame.
  struct LimitFamily {
    std::string name;  // edgemon_rail_current_max_amperes, ..._crit_amperes, ...
    std::string unit;
    std::string help;
    std::vector<std::pair<std::string, std::string>> samples;  // escaped labels, value text
  };
  void AddLimits(const Inventory& inventory, const ChannelSeries& series,
                 const std::string& labels);

  std::vector<Family> families_;
  std::vector<LimitFamily> limits_;
  std::vector<std::pair<std::string, std::string>> board_labels_;  // escaped, nvpmodel excluded
  std::string nvpmodel_name_;                                      // escaped, from discovery
  std::optional<ChannelId> nvpmodel_channel_;
  std::vector<std::pair<int64_t, std::string>> nvpmodel_modes_;  // id -> escaped name
  std::vector<std::pair<ChannelId, std::string>> error_labels_;  // escaped channel keys
  size_t channels_ = 0;
};

// One-shot convenience: Exposition(inventory).Render(...).
std::string RenderExposition(const Inventory& inventory, const Frame* frame, const Health& health,
                             Format format);

}  // namespace edgemon::metrics
