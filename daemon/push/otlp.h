// OpenTelemetry metrics (OTLP/HTTP protobuf): frames and closed windows as
// one serialized opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest,
// the body of `POST /v1/metrics` with `Content-Type: application/x-protobuf`
// (and the request of OTLP/gRPC's MetricsService/Export). docs/otlp.md lists
// every metric, unit and attribute beside the /metrics name it mirrors.
//
// One ResourceMetrics (the board: service.name=edgemond, service.version,
// service.instance.id and host.name (the host name), host.id,
// edgemon.board.model/soc/l4t, then Identity::labels, which replace a
// built-in attribute of the same name), one ScopeMetrics
// (scope "edgemon" and its version), and one Metric per name and unit that
// carries the points of every channel and frame it holds.
//
// Pure functions of their arguments; any thread may call them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "daemon/push/types.h"
#include "edgemon/channel.h"
#include "edgemon/model.h"

namespace edgemon::push {

// The OpenTelemetry semantic conventions the metrics follow (the scope's
// schema_url names it): the hardware conventions' hw.* metrics, status
// Development in that version.
inline constexpr char kOtlpSemconvVersion[] = "1.44.0";

struct OtlpOptions {
  // CLOCK_REALTIME ns from which the rail energy counters count (the start
  // of the daemon whose counters the frames hold, or of the store they were
  // carried over in): start_time_unix_nano of hw.energy, hw.host.energy and
  // the other energy sums; other counters (events) leave it unset. 0 when
  // unknown: left unset.
  // A point before it, or after a counter went down within the batch (a
  // restart that did not carry the counter over), gets the start of its own
  // run instead (the previous point's time after a drop, else unset).
  int64_t counter_start_ns = 0;
};

// The frames' channels as OTLP metrics, each point at its frame's own
// timestamp (Frame::realtime_ns). Absent values are left out, never sent as
// 0; channels flagged kFlagConstant are left out (as /metrics does), and so
// are frames without a realtime stamp (realtime_ns <= 0).
std::string EncodeOtlpFrames(const Inventory& inventory, std::span<const Frame> frames,
                             const Identity& identity, const OtlpOptions& options = {});

// Closed windows (record/measure runs) as data points: one per window and
// rail, its energy in joules (gauges edgemon.window.energy and, for the
// board's input rail, edgemon.window.host.energy), at the window's end with
// its start as start_time_unix_nano, labelled with the window's label and
// id. Open windows and rails without an energy figure are left out.
std::string EncodeOtlpWindows(const Inventory& inventory, std::span<const WindowEnergy> windows,
                              const Identity& identity);

}  // namespace edgemon::push
