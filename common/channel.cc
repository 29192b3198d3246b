#include "edgemon/channel.h"

#include <array>

namespace edgemon {
namespace {

constexpr std::array<std::string_view, 12> kKindNames = {"cpu",    "gpu",     "emc",   "memory",
                                                         "swap",   "thermal", "rail",  "fan",
                                                         "engine", "devfreq", "board", "event"};

constexpr std::array<std::string_view, 26> kFieldNames = {
    "load",     "freq",    "freq_min",  "freq_max", "online", "temp",   "power",
    "voltage",  "current", "energy",    "duty",     "speed",  "state",  "total",
    "used",     "free",    "available", "buffers",  "cached", "shared", "lfb_blocks",
    "lfb_size", "devices", "mode",      "events",   "time"};

constexpr std::array<std::string_view, 14> kUnitNames = {
    "", "permille", "kHz", "mC", "mW", "mV", "mA", "mJ", "rpm", "KiB", "count", "bool", "id", "ms"};

template <typename E, size_t N>
std::optional<E> Lookup(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == s) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

Unit UnitOf(Field field) {
  switch (field) {
    case Field::kLoad:
    case Field::kDuty:
      return Unit::kPermille;
    case Field::kFreq:
    case Field::kFreqMin:
    case Field::kFreqMax:
      return Unit::kKhz;
    case Field::kOnline:
    case Field::kState:
      return Unit::kBool;
    case Field::kTemp:
      return Unit::kMilliCelsius;
    case Field::kPower:
      return Unit::kMilliwatt;
    case Field::kVoltage:
      return Unit::kMillivolt;
    case Field::kCurrent:
      return Unit::kMilliamp;
    case Field::kEnergy:
      return Unit::kMillijoule;
    case Field::kSpeed:
      return Unit::kRpm;
    case Field::kTotal:
    case Field::kUsed:
    case Field::kFree:
    case Field::kAvailable:
    case Field::kBuffers:
    case Field::kCached:
    case Field::kShared:
    case Field::kLfbSize:
      return Unit::kKib;
    case Field::kLfbBlocks:
    case Field::kDevices:
    case Field::kEvents:
      return Unit::kCount;
    case Field::kTime:
      return Unit::kMillisecond;
    case Field::kMode:
      return Unit::kId;
  }
  return Unit::kNone;
}

std::string_view ToString(Kind kind) {
  return kKindNames.at(static_cast<size_t>(kind));
}
std::string_view ToString(Field field) {
  return kFieldNames.at(static_cast<size_t>(field));
}
std::string_view ToString(Unit unit) {
  return kUnitNames.at(static_cast<size_t>(unit));
}
std::optional<Kind> KindFromString(std::string_view s) {
  return Lookup<Kind>(kKindNames, s);
}
std::optional<Field> FieldFromString(std::string_view s) {
  return Lookup<Field>(kFieldNames, s);
}

const std::string* Channel::Attr(std::string_view key) const {
  for (const auto& [k, v] : attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Channel::Key() const {
  std::string key(ToString(kind));
  key += '/';
  key += name;
  key += '/';
  key += ToString(field);
  return key;
}

const Channel* Inventory::Find(Kind kind, std::string_view name, Field field) const {
  for (const auto& c : channels) {
    if (c.kind == kind && c.field == field && c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace edgemon
