// libFuzzer target: every sysfs/procfs text parser on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/collect/parse.h"
#include "edgemon/proc_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgemon::parse;
  std::string_view s(reinterpret_cast<const char*>(data), size);
  (void)Int(s);
  (void)Uint(s);
  (void)LeadingInt(s);
  (void)CpuList(s);
  (void)Words(s);
  std::vector<CpuTimes> times;
  (void)ProcStatCpus(s, true, times);
  (void)ProcStatCpus(s, false, times);
  std::vector<MeminfoEntry> mem;
  Meminfo(s, mem);
  (void)BuddyinfoLargestFree(s);
  (void)Swaps(s);
  (void)L4tRelease(s);
  (void)NvpmodelStatus(s);
  (void)Nvpmodel(s);
  (void)PpDpmCurrentMhz(s);
  (void)DtStrings(s);
  (void)CpuModel(s);
  (void)NvmapIovmmMaps(s);
  (void)edgemon::ParseProcStat(s);
  (void)ProcPidStatus(s);
  (void)ProcPidCmdline(s);
  (void)Passwd(s);
  return 0;
}
