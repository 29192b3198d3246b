#include "client/convert.h"

namespace edgemon::client {

edgemon::client::DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& pb) {
  edgemon::client::DeviceInfo info;
  info.inventory.board = wire::BoardFromProto(pb.board());
  info.generation = pb.generation();
  info.daemon_version = pb.daemon_version();
  info.interval_ms = pb.interval_ms();
  info.energy_rate_hz = pb.energy_rate_hz();
  info.api_version = pb.api_version();
  if (pb.now_ns() != 0) info.now_ns = pb.now_ns();
  for (const v1::PushStatus& p : pb.push()) {
    PushStatus s;
    s.destination = p.destination();
    s.protocol = p.protocol();
    if (p.has_last_success_ns()) s.last_success_ns = p.last_success_ns();
    if (p.has_last_error_ns()) s.last_error_ns = p.last_error_ns();
    s.last_error = p.last_error();
    if (p.has_backlog_frames()) s.backlog_frames = p.backlog_frames();
    if (p.has_backlog_age_ns()) s.backlog_age_ns = p.backlog_age_ns();
    s.samples_sent = p.samples_sent();
    s.samples_retried = p.samples_retried();
    s.samples_failed = p.samples_failed();
    if (p.has_failing_since_ns()) s.failing_since_ns = p.failing_since_ns();
    s.stalled = p.stalled();
    info.push.push_back(std::move(s));
  }
  std::vector<Channel>& channels = info.inventory.channels;
  for (const v1::Channel& c : pb.channels()) {
    if (c.id() > wire::kMaxChannelId) {
      ++info.unknown_channels;
      continue;
    }
    if (c.id() >= channels.size()) {
      size_t old = channels.size();
      channels.resize(c.id() + 1);
      for (size_t i = old; i < channels.size(); ++i) channels[i].id = static_cast<ChannelId>(i);
    }
    std::optional<Channel> ch = wire::ChannelFromProto(c);
    if (ch) {
      channels[c.id()] = std::move(*ch);
    } else {
      ++info.unknown_channels;
    }
  }
  return info;
}

Process ProcessFromProto(const v1::Process& pb) {
  Process p;
  p.pid = pb.pid();
  p.user = pb.user();
  p.name = pb.name();
  p.command = pb.command();
  if (pb.has_cpu_permille()) p.cpu_permille = pb.cpu_permille();
  if (pb.has_rss_kib()) p.rss_kib = pb.rss_kib();
  if (pb.has_gpu_mem()) p.gpu_mem_kib = pb.gpu_mem_kib();
  return p;
}

}  // namespace edgemon::client
