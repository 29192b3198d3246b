// OpenTelemetry metrics (OTLP/HTTP protobuf): frames and closed windows as
// one serialized opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest.
#pragma once

#include <span>
#include <string>

#include "daemon/push/types.h"
#include "edgemon/channel.h"
#include "edgemon/model.h"

namespace edgemon::push {

// The frames' channels as OTLP metrics, each point at its frame's own
// timestamp (Frame::realtime_ns). Absent values are left out, never sent as 0.
std::string EncodeOtlpFrames(const Inventory& inventory, std::span<const Frame> frames,
                             const Identity& identity);

// Closed windows (record/measure runs) as data points: one per window and
// rail, its energy in joules, labelled with the window.
std::string EncodeOtlpWindows(const Inventory& inventory, std::span<const WindowEnergy> windows,
                              const Identity& identity);

}  // namespace edgemon::push
