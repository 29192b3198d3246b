#include "daemon/collect/collector.h"

#include <cerrno>
#include <utility>

#include "daemon/collect/parse.h"

namespace edgemon {

std::string_view ToString(ReadError e) {
  switch (e) {
    case ReadError::kMissing:
      return "missing";
    case ReadError::kAgain:
      return "unavailable (EAGAIN)";
    case ReadError::kIo:
      return "I/O error";
    case ReadError::kEmpty:
      return "empty";
    case ReadError::kGarbage:
      return "unparsable";
    case ReadError::kRange:
      return "out of range";
    case ReadError::kGated:
      return "gated (-256 C)";
  }
  return "error";
}

ReadError ErrorFromErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case ESTALE:
      return ReadError::kMissing;
    case EAGAIN:
    case EBUSY:
    case ETIMEDOUT:
      return ReadError::kAgain;
    default:
      return ReadError::kIo;
  }
}

void ChannelTable::BeginPass() {
  live_.assign(channels_.size(), false);
}

ChannelId ChannelTable::Add(Channel c) {
  std::string base = c.name;
  for (int n = 2;; ++n) {
    auto it = by_key_.find(c.Key());
    if (it == by_key_.end()) break;
    if (!live_[it->second]) {
      // Seen in an earlier pass: same channel, refreshed description.
      c.id = it->second;
      channels_[c.id] = std::move(c);
      live_[it->second] = true;
      return it->second;
    }
    c.name = base + "#" + std::to_string(n);
  }
  c.id = static_cast<ChannelId>(channels_.size());
  by_key_.emplace(c.Key(), c.id);
  channels_.push_back(std::move(c));
  live_.push_back(true);
  return channels_.back().id;
}

ChannelId DiscoverContext::Add(Channel c) {
  if (c.unit == Unit::kNone) c.unit = UnitOf(c.field);
  const ChannelId id = table_.Add(std::move(c));
  if (added_ != nullptr) added_->push_back(id);
  return id;
}

FileId DiscoverContext::Open(const std::string& path) {
  FileId id = fs_.Open(path);
  if (id >= 0) opened_.push_back(id);
  return id;
}

std::optional<int64_t> ReadInt(SysFs& fs, const std::string& path) {
  auto text = fs.ReadText(path, 256);
  if (!text) return std::nullopt;
  return parse::Int(*text);
}

std::optional<std::string> ReadLine(SysFs& fs, const std::string& path) {
  auto text = fs.ReadText(path, 4096);
  if (!text) return std::nullopt;
  std::string_view s = *text;
  s = s.substr(0, s.find('\n'));
  s = parse::Trim(s);
  if (s.empty()) return std::nullopt;
  return std::string(s);
}

std::optional<int64_t> DiscoverContext::ReadInt(const std::string& path) {
  return edgemon::ReadInt(fs_, path);
}

std::optional<std::string> DiscoverContext::ReadLine(const std::string& path) {
  return edgemon::ReadLine(fs_, path);
}

void SampleContext::Fail(ChannelId id, ReadError e) {
  if (id >= values_.size()) return;
  values_[id].reset();
  failures_[id] = e;
  failed_.push_back(id);
  if (e == ReadError::kMissing) rediscover_ = true;
}

void SampleContext::Copy(ChannelId from, ChannelId to) {
  if (from >= values_.size() || to >= values_.size()) return;
  if (values_[from]) {
    values_[to] = values_[from];
  } else {
    Fail(to, failures_[from]);
  }
}

std::optional<std::string_view> SampleContext::Read(FileId file, ChannelId id) {
  ssize_t n = fs_.Read(file, buf_, sizeof buf_);
  if (n < 0) {
    Fail(id, ErrorFromErrno(static_cast<int>(-n)));
    return std::nullopt;
  }
  if (n == 0) {
    Fail(id, ReadError::kEmpty);
    return std::nullopt;
  }
  return std::string_view(buf_, static_cast<size_t>(n));
}

std::optional<int64_t> SampleContext::ReadInt(FileId file, ChannelId id) {
  auto text = Read(file, id);
  if (!text) return std::nullopt;
  auto v = parse::Int(*text);
  if (!v) Fail(id, parse::Trim(*text).empty() ? ReadError::kEmpty : ReadError::kGarbage);
  return v;
}

std::optional<int64_t> SampleContext::ReadScaled(FileId file, ChannelId id, int64_t num,
                                                 int64_t den, int64_t lo, int64_t hi) {
  auto v = ReadInt(file, id);
  if (!v) return std::nullopt;
  int64_t out;
  if (*v < lo || *v > hi || __builtin_mul_overflow(*v, num, &out) || den == 0) {
    Fail(id, ReadError::kRange);
    return std::nullopt;
  }
  out /= den;
  Set(id, out);
  return out;
}

Channel WithField(const Channel& base, Field field) {
  Channel c = base;
  c.field = field;
  return c;
}

void SampleScaled(SampleContext& ctx, const std::vector<ScaledFile>& files) {
  for (const auto& f : files) ctx.ReadScaled(f.file, f.channel, f.num, f.den, f.lo, f.hi);
}

std::optional<ChannelId> AddScaled(DiscoverContext& ctx, Channel c, const std::string& path,
                                   int64_t num, int64_t den, std::vector<ScaledFile>& out) {
  FileId f = ctx.Open(path);
  if (f < 0) return std::nullopt;
  ChannelId id = ctx.Add(std::move(c));
  out.push_back({f, id, num, den});
  return id;
}

}  // namespace edgemon
