// The channel model shared by the daemon, the clients and the TUI.
//
// Every reading edgemon takes is a channel: a stable id, a kind (what part of
// the machine), a name as the board labels it (VDD_IN, cpu-thermal, cpu3), a
// field (what is measured) and a fixed integer unit. Collectors declare their
// channels once (the Inventory) and fill values every tick (the Frame).
//
// Units are fixed per field and named in code (power_mw, temp_mc). A value that
// could not be read is *absent* from the frame for that tick: it is never
// stored as 0 or as a sentinel such as -256 C.
//
// Thread safety: plain value types; no internal synchronisation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgemon {

using ChannelId = uint32_t;

// What part of the machine a channel belongs to.
enum class Kind : uint8_t {
  kCpu,      // one core ("cpu3") or the aggregate ("cpu")
  kGpu,      // integrated (devfreq) or discrete GPU
  kEmc,      // external memory controller
  kMemory,   // RAM
  kSwap,     // swap devices, zram
  kThermal,  // thermal zones and hwmon temperatures
  kRail,     // power rails: INA3221/INA238 channels, power_supply, RAPL domains
  kFan,      // fans
  kEngine,   // hardware engines: NVENC, NVDEC, VIC, DLA, ...
  kDevfreq,  // other devfreq devices
  kBoard,    // board-level state (nvpmodel mode)
  kEvent,    // protection and throttle events: soctherm over-current counters,
             // INA current/power alerts, thermal throttling, a stuck fan
};

// The last Kind, for loops over every kind.
inline constexpr Kind kLastKind = Kind::kEvent;

// What is measured. Each field has one fixed unit (see UnitOf).
enum class Field : uint8_t {
  kLoad,       // permille of busy time
  kFreq,       // kHz, current
  kFreqMin,    // kHz, current lower policy limit
  kFreqMax,    // kHz, current upper policy limit
  kOnline,     // 0/1
  kTemp,       // millidegree C
  kPower,      // mW
  kVoltage,    // mV
  kCurrent,    // mA
  kEnergy,     // mJ, cumulative counter since discovery
  kDuty,       // permille (fan PWM duty)
  kSpeed,      // rpm
  kState,      // 0/1 (engine clock enabled, railgate allowed, ...)
  kTotal,      // KiB
  kUsed,       // KiB
  kFree,       // KiB
  kAvailable,  // KiB
  kBuffers,    // KiB
  kCached,     // KiB
  kShared,     // KiB (NvMapMemUsed: GPU/CPU shared nvmap memory)
  kLfbBlocks,  // count of free blocks of the largest free size
  kLfbSize,    // KiB, size of the largest free block
  kDevices,    // count (zram devices)
  kMode,       // id (nvpmodel power mode)
  kEvents,     // count of events since the source started counting (a counter)
  kTime,       // ms spent in the condition the channel names (a counter)
};

enum class Unit : uint8_t {
  kNone,
  kPermille,
  kKhz,
  kMilliCelsius,
  kMilliwatt,
  kMillivolt,
  kMilliamp,
  kMillijoule,
  kRpm,
  kKib,
  kCount,
  kBool,
  kId,
  kMillisecond,
};

Unit UnitOf(Field field);
std::string_view ToString(Kind kind);
std::string_view ToString(Field field);
std::string_view ToString(Unit unit);
std::optional<Kind> KindFromString(std::string_view s);
std::optional<Field> FieldFromString(std::string_view s);

// Channel flags.
enum ChannelFlag : uint32_t {
  kFlagNone = 0,
  // The source is known to report a fixed value (PMIC-Die at 100 C): it is
  // shown but must not be read as a measurement.
  kFlagConstant = 1u << 0,
  // This rail measures the whole board's input power (VDD_IN, POM_5V_IN,
  // psys). Sub-rails name it as their parent; never add them to it.
  kFlagInputRail = 1u << 1,
  // A monotonic cumulative counter (energy): a window's value is a difference.
  kFlagCounter = 1u << 2,
  // Derived by edgemon rather than read (power = V x I, RAPL power from the
  // energy counter's slope, RAM used).
  kFlagDerived = 1u << 3,
};

// A trip point of a thermal zone, in millidegree C.
struct TripPoint {
  std::string type;  // "passive", "hot", "critical", ...
  int64_t temp_mc = 0;
};

// Static description of one channel, read at discovery.
struct Channel {
  ChannelId id = 0;
  Kind kind = Kind::kBoard;
  std::string name;  // as the board labels it: "VDD_IN", "cpu-thermal", "cpu3"
  Field field = Field::kLoad;
  Unit unit = Unit::kNone;
  std::string
      device;  // where it comes from: "ina3221 1-0040", "hwmon coretemp", "devfreq 17000000.gpu"
  std::string parent;  // rails: name of the rail this one is part of; "" for top-level
  uint32_t flags = kFlagNone;
  // Limits in the channel's unit, where the source declares them.
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  std::optional<int64_t> crit;
  std::vector<TripPoint> trips;  // thermal zones
  // Free-form static attributes: governor, label, type, chip, ...
  std::vector<std::pair<std::string, std::string>> attrs;

  bool Has(ChannelFlag f) const { return (flags & f) != 0; }
  const std::string* Attr(std::string_view key) const;
  std::string Key() const;  // "kind/name/field": stable across restarts
};

// A value is absent when the source could not be read this tick.
using Value = std::optional<int64_t>;

// One tick's readings, indexed by ChannelId.
struct Frame {
  uint64_t seq = 0;
  int64_t boottime_ns = 0;  // CLOCK_BOOTTIME
  int64_t realtime_ns = 0;  // CLOCK_REALTIME
  std::vector<Value> values;

  Value Get(ChannelId id) const { return id < values.size() ? values[id] : std::nullopt; }
};

// Board identity, read at discovery (nvpmodel mode is also a channel since it
// can change while the daemon runs).
struct BoardInfo {
  std::string model;      // device-tree model, or DMI product name
  std::string soc;        // "tegra234", ... from the device-tree compatible list
  std::string l4t;        // "36.4.3"; empty off Jetson
  std::string jetpack;    // major JetPack generation derived from L4T ("6"); empty off Jetson
  std::string nvpmodel;   // current power mode name, e.g. "MAXN"
  std::string kernel;     // osrelease
  std::string cpu_model;  // /proc/cpuinfo
  std::string hostname;
  int64_t nvpmodel_id = -1;                                     // -1 when unknown
  std::vector<std::pair<int64_t, std::string>> nvpmodel_modes;  // id -> name
};

// All channels known to the daemon, indexed by id. Ids are dense and never
// reused: a channel whose source vanished stays, and reads as absent.
struct Inventory {
  BoardInfo board;
  std::vector<Channel> channels;

  const Channel* Find(Kind kind, std::string_view name, Field field) const;
};

}  // namespace edgemon
