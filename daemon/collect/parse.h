// Parsers for the text formats of sysfs and procfs.
//
// Every parser is strict and total: any input, however malformed, yields
// either a value or "no value"; none throws, allocates without bound, or
// reads outside its input. They are fuzzed (tests/fuzz/parse_fuzz.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgemon/text.h"

namespace edgemon::parse {

// Trimming and ASCII case: the shared copies in include/edgemon/text.h.
using text::Lower;
using text::Trim;
using text::Upper;

// Whether an INA3221 channel label (hwmon inK_label, iio rail_name_K) names
// no rail. NVIDIA's device trees label a channel that is not connected "NC"
// (the AGX Orin's second monitor has two); "(NC)" and "N/C" are the same mark
// in other trees; an empty label names nothing; and the upstream hwmon
// driver's seventh channel, "sum of shunt voltages", is the sum of the three
// shunts, not a rail of its own. Compared trimmed and case-insensitively, and
// exactly: "VDD_SYNC" or "NCPU" are rails.
bool IsUnusedInaLabel(std::string_view label);

// A whole file holding one integer: optional surrounding whitespace, optional
// sign, decimal digits. Anything else, and overflow of int64, is nullopt.
std::optional<int64_t> Int(std::string_view s);
// As Int, but for unsigned counters up to 2^64-1.
std::optional<uint64_t> Uint(std::string_view s);
// A cooling device's stats/time_in_state_ms ("<state> <ms>" per line): the
// ms spent in the states above 0 (throttling). nullopt when a line is not two
// integers or the sum overflows.
std::optional<int64_t> TimeInStateAboveZero(std::string_view text);
// The first whitespace-separated token as an integer ("32760 ma" -> 32760).
std::optional<int64_t> LeadingInt(std::string_view s);
// The non-empty runs of `s` between any of the `separators` (views into `s`):
// "1 2\t3\n" -> {"1", "2", "3"}.
std::vector<std::string_view> Words(std::string_view s, std::string_view separators = " \t\n");

// A kernel CPU list such as "0-3,5,7-8". nullopt when malformed or when it
// names more than `max_cpus` CPUs.
std::optional<std::vector<int>> CpuList(std::string_view s, int max_cpus = 8192);

// Per-CPU jiffy counters from /proc/stat (cpu = -1 for the aggregate line).
struct CpuTimes {
  int cpu = -1;
  uint64_t busy = 0;   // user+nice+system+irq+softirq+steal
  uint64_t total = 0;  // busy + idle + iowait
};
// Parses the leading "cpu" lines of /proc/stat. Returns true when the cpu
// section ended inside `text` (a later non-cpu line, or the end of a file
// that was read whole); false means the buffer cut it short.
bool ProcStatCpus(std::string_view text, bool whole_file, std::vector<CpuTimes>& out);

// One "Key:   value kB" line of /proc/meminfo, value in KiB.
struct MeminfoEntry {
  std::string_view key;
  int64_t kib = 0;
};
void Meminfo(std::string_view text, std::vector<MeminfoEntry>& out);
// Only the sizes of `keys` (what Meminfo gives for them: the last line of
// each key with a kB value) into out[i] for keys[i]; a key not found leaves
// its slot as it was. Per tick: no entry list, no number parsed for the
// lines nobody asked for.
void MeminfoValues(std::string_view text, std::span<const std::string_view> keys,
                   std::span<std::optional<int64_t>> out);

// /proc/PID/stat: edgemon/proc_stat.h (the clients read it too).

// The fields of /proc/PID/status that the process list shows: the resident
// set ("VmRSS:  5120 kB"; none for kernel threads) and the real uid (first
// of the four numbers on "Uid:"). Each is nullopt when absent or malformed.
struct ProcStatus {
  std::optional<uint64_t> rss_kib;
  std::optional<uint32_t> uid;
  // Supplementary groups ("Groups:"; empty when the process has none),
  // up to the first entry that is not a number.
  std::optional<std::vector<uint32_t>> groups;
};
ProcStatus ProcPidStatus(std::string_view text);

// /proc/PID/cmdline: NUL-separated arguments, joined with spaces; trailing
// NULs dropped (empty for kernel threads).
std::string ProcPidCmdline(std::string_view text);

// /etc/passwd: uid -> user name. Comments, blank and malformed lines (fewer
// than three fields, an empty name, a uid that is not a number) are skipped;
// the first line for a uid wins, as getpwuid() has it.
std::map<uint32_t, std::string> Passwd(std::string_view text);

// The largest free block in /proc/buddyinfo: the highest order with any free
// block in any zone, and the count of such blocks over all zones.
struct LargestFree {
  int order = 0;
  int64_t blocks = 0;
};
std::optional<LargestFree> BuddyinfoLargestFree(std::string_view text);

// /proc/swaps rows (sizes in KiB).
struct SwapEntry {
  std::string name;
  std::string type;
  int64_t size_kib = 0;
  int64_t used_kib = 0;
};
std::vector<SwapEntry> Swaps(std::string_view text);
// The same into `out` (cleared first; its buffer is kept).
void Swaps(std::string_view text, std::vector<SwapEntry>& out);

// "# R36 (release), REVISION: 4.3, ..." -> "36.4.3".
std::optional<std::string> L4tRelease(std::string_view text);
// "pmode:0002" -> 2.
std::optional<int64_t> NvpmodelStatus(std::string_view text);
// "< POWER_MODEL ID=0 NAME=MAXN >" lines of /etc/nvpmodel.conf, and the
// "< PM_CONFIG DEFAULT=2 >" id (or -1).
struct NvpmodelConf {
  std::vector<std::pair<int64_t, std::string>> modes;
  int64_t default_id = -1;
};
NvpmodelConf Nvpmodel(std::string_view text);

// amdgpu pp_dpm_* tables ("1: 1000Mhz *"): the starred level in MHz.
std::optional<int64_t> PpDpmCurrentMhz(std::string_view text);

// Device-tree property strings (NUL-separated, NUL-terminated).
std::vector<std::string> DtStrings(std::string_view text);

// The CPU model named in /proc/cpuinfo ("model name", else "Hardware", else
// "Processor"/"CPU part"); empty when none.
std::string CpuModel(std::string_view cpuinfo);

// nvmap's per-process accounting (/sys/kernel/debug/nvmap/iovmm/maps or
// .../clients): a "CLIENT PROCESS PID SIZE" header, then one row per nvmap
// client "<client> <process> <pid> <size>K" (the process name may hold
// spaces), each followed by indented rows of its handles, and a last row
// "total <size>K". A process with several clients is one entry, their sizes
// summed. nullopt when the text is not that table (no header, or no total).
struct NvmapClient {
  int pid = 0;
  std::string process;
  uint64_t kib = 0;
};
struct NvmapMaps {
  std::vector<NvmapClient> clients;  // by pid, ascending
  uint64_t total_kib = 0;
};
std::optional<NvmapMaps> NvmapIovmmMaps(std::string_view text);

}  // namespace edgemon::parse
