// The periods' clock values (I15, level 0): one row of period_values per
// chunk (the hour of the periods' starts) holding every clock channel's
// values of its periods, packed. An hour's write of closed periods fills a
// few overflow pages instead of a row per (period, clock, value) spread
// over the table's leaves, and a read of a partial hour takes one row.
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store::internal {

namespace {

using codec_internal::PutVarint;
using codec_internal::ReadVarint;
using codec_internal::UnZigZag;
using codec_internal::ZigZag;

constexpr uint8_t kValuesVersion = 1;

// A clock's first value of a period is written against its first value of
// the last period it had values in (a steady clock: one byte).
class FirstValues {
 public:
  uint64_t& operator[](uint32_t channel) {
    for (auto& [ch, v] : seen_) {
      if (ch == channel) return v;
    }
    return seen_.emplace_back(channel, 0).second;
  }

 private:
  std::vector<std::pair<uint32_t, uint64_t>> seen_;
};

}  // namespace

// Layout: PackedStarts' opening, then per period: its start, varint
// number of channels, and per channel: varint id step (from 0 for the
// period's first), varint number of values, and per value:
// zigzag difference from the channel's first value of its last period for
// the first, varint rise over the previous value after it, then varint
// count. Differences wrap in uint64, so every int64 value round-trips.
std::string PackPeriodValues(int64_t chunk, const std::vector<PeriodValue>& values) {
  PackedStarts starts(chunk, values);
  // Counts of periods and of channels, before the bytes.
  std::vector<uint64_t> groups;  // per period: channels; per channel: values
  uint64_t periods = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const bool new_period = i == 0 || values[i].t_ns != values[i - 1].t_ns;
    if (new_period) {
      ++periods;
      groups.push_back(0);
    }
    if (new_period || values[i].channel != values[i - 1].channel) {
      ++groups[groups.size() - 1];
    }
  }
  std::string out(1 + 10 * (2 + 2 * periods + 4 * values.size()), '\0');
  char* p = starts.PutHeader(out.data(), kValuesVersion, periods);
  FirstValues firsts;
  size_t period = 0;
  for (size_t i = 0; i < values.size();) {
    const int64_t t = values[i].t_ns;
    p = starts.PutStart(p, t);
    p = PutVarint(groups[period++], p);
    uint32_t channel = 0;
    while (i < values.size() && values[i].t_ns == t) {
      const uint32_t ch = values[i].channel;
      size_t j = i;
      while (j < values.size() && values[j].t_ns == t && values[j].channel == ch) ++j;
      p = PutVarint(ch - channel, p);
      p = PutVarint(j - i, p);
      channel = ch;
      uint64_t& first = firsts[ch];
      for (size_t k = i; k < j; ++k) {
        const auto v = static_cast<uint64_t>(values[k].value);
        if (k == i) {
          p = PutVarint(ZigZag(static_cast<int64_t>(v - first)), p);
          first = v;
        } else {
          p = PutVarint(v - static_cast<uint64_t>(values[k - 1].value), p);
        }
        p = PutVarint(values[k].count, p);
      }
      i = j;
    }
  }
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

bool UnpackPeriodValues(int64_t chunk, std::string_view data, std::vector<PeriodValue>& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  const uint8_t* end = p + data.size();
  const size_t had = out.size();
  auto fail = [&] {
    out.resize(had);
    return false;
  };
  PackedStarts starts(chunk);
  uint64_t periods = 0;
  // Each period takes at least four bytes (step, channels, id, values...).
  if (!starts.ReadHeader(p, end, kValuesVersion, 4, periods)) return fail();
  FirstValues firsts;
  for (uint64_t i = 0; i < periods; ++i) {
    int64_t t = 0;
    uint64_t channels = 0;
    if (!starts.ReadStart(p, end, t) || !ReadVarint(p, end, channels)) return fail();
    // A period has a channel with a value.
    if (channels == 0 || channels > static_cast<uint64_t>(end - p) / 3) return fail();
    uint64_t channel = 0;
    for (uint64_t c = 0; c < channels; ++c) {
      uint64_t id_step = 0, n = 0;
      if (!ReadVarint(p, end, id_step) || !ReadVarint(p, end, n)) return fail();
      // Ids rise within the period and fit a channel id.
      if (id_step == 0 || id_step > UINT32_MAX - channel || n == 0 ||
          n > static_cast<uint64_t>(end - p) / 2) {
        return fail();
      }
      channel += id_step;
      const auto ch = static_cast<uint32_t>(channel);
      uint64_t& first = firsts[ch];
      uint64_t value = 0;
      for (uint64_t k = 0; k < n; ++k) {
        uint64_t d = 0, count = 0;
        if (!ReadVarint(p, end, d) || !ReadVarint(p, end, count)) return fail();
        if (count == 0 || count > static_cast<uint64_t>(INT64_MAX)) return fail();
        if (k == 0) {
          value = first + static_cast<uint64_t>(UnZigZag(d));
          first = value;
        } else {
          // Values rise within a channel's period, within int64.
          const uint64_t next = value + d;
          if (d == 0 || static_cast<int64_t>(next) <= static_cast<int64_t>(value)) return fail();
          value = next;
        }
        out.push_back(PeriodValue{t, ch, static_cast<int64_t>(value), count});
      }
    }
  }
  if (p != end) return fail();
  return true;
}

Status ForEachPeriodValue(sql::Conn& c, int64_t from_ns, int64_t to_ns,
                          const std::function<void(const PeriodValue&)>& fn) {
  if (to_ns <= from_ns) return Status::Ok();
  {
    // Rows written before schema 15, until retention deletes them.
    sql::Stmt s(c,
                "SELECT t_ns, channel, value, count FROM span_values WHERE level = 0 "
                "AND t_ns >= ?1 AND t_ns < ?2");
    s.Bind(1, from_ns).Bind(2, to_ns);
    while (s.Step()) {
      if (s.Int(1) < 1 || s.Int(1) > UINT32_MAX || s.Int(3) <= 0) continue;
      fn(PeriodValue{s.Int(0), static_cast<uint32_t>(s.Int(1)), s.Int(2),
                     static_cast<uint64_t>(s.Int(3))});
    }
    if (s.failed()) return s.status();
  }
  sql::Stmt s(c, "SELECT chunk, data FROM period_values WHERE chunk >= ?1 AND chunk <= ?2");
  s.Bind(1, RollupChunk(from_ns)).Bind(2, RollupChunk(to_ns - 1));
  std::vector<PeriodValue> values;
  while (s.Step()) {
    values.clear();
    // A row that does not unpack (a damaged file) reads as missing.
    if (!UnpackPeriodValues(s.Int(0), s.Blob(1), values)) continue;
    for (const auto& v : values) {
      if (v.t_ns >= from_ns && v.t_ns < to_ns) fn(v);
    }
  }
  return s.failed() ? s.status() : Status::Ok();
}

Status PutPeriodValues(sql::Conn& c, int64_t chunk, const std::vector<PeriodValue>& values) {
  if (values.empty()) {
    sql::Stmt d(c, "DELETE FROM period_values WHERE chunk = ?1");
    return d.Bind(1, chunk).Run();
  }
  sql::Stmt s(c, "INSERT OR REPLACE INTO period_values(chunk, data) VALUES(?1, ?2)");
  return s.Bind(1, chunk).BindBlob(2, PackPeriodValues(chunk, values)).Run();
}

}  // namespace edgemon::store::internal
