#include "daemon/collect/parse.h"

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <sstream>

#include "tests/support/temp_tree.h"

namespace edgemon::parse {
namespace {

TEST(ParseInt, AcceptsKernelValueFiles) {
  EXPECT_EQ(Int("45500\n"), 45500);
  EXPECT_EQ(Int("-256000\n"), -256000);
  EXPECT_EQ(Int("  7 \n"), 7);
  EXPECT_EQ(Uint("18446744073709551615\n"), UINT64_MAX);
}

TEST(ParseInt, RejectsGarbageEmptyAndOverflow) {
  EXPECT_FALSE(Int(""));
  EXPECT_FALSE(Int("\n"));
  EXPECT_FALSE(Int("12abc"));
  EXPECT_FALSE(Int("abc"));
  EXPECT_FALSE(Int("1 2"));
  EXPECT_FALSE(Int("99999999999999999999"));
  EXPECT_FALSE(Uint("-1"));
}

TEST(ParseWords, SplitsOnAnySeparatorAndSkipsEmptyRuns) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(Words("  1 2\t\t3\n"), (V{"1", "2", "3"}));
  EXPECT_EQ(Words("0-3,5 7\n", " ,\t\n"), (V{"0-3", "5", "7"}));
  EXPECT_EQ(Words("a,b"), (V{"a,b"}));
  EXPECT_EQ(Words(""), V{});
  EXPECT_EQ(Words(" \n\t"), V{});
}

TEST(ParseCpuList, Ranges) {
  EXPECT_EQ(CpuList("0-3,5\n"), (std::vector<int>{0, 1, 2, 3, 5}));
  EXPECT_EQ(CpuList("\n"), std::vector<int>{});
  EXPECT_FALSE(CpuList("3-1"));
  EXPECT_FALSE(CpuList("0-999999999"));
  EXPECT_FALSE(CpuList("a"));
}

TEST(ParseProcStat, CpuLinesAndCutBuffers) {
  std::vector<CpuTimes> t;
  std::string_view text =
      "cpu  10 0 10 70 10 0 0 0 0 0\ncpu0 5 0 5 35 5 0 0 0 0 0\ncpu1 5 0 5 35 5 0 0 0 0 0\n"
      "intr 1 2 3\n";
  EXPECT_TRUE(ProcStatCpus(text, false, t));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].cpu, -1);
  EXPECT_EQ(t[0].busy, 20u);
  EXPECT_EQ(t[0].total, 100u);
  EXPECT_EQ(t[2].cpu, 1);
  // Cut in the middle of the cpu section: the caller must read more.
  EXPECT_FALSE(ProcStatCpus(text.substr(0, 40), false, t));
}

TEST(ParseMeminfo, KiBLinesOnly) {
  std::vector<MeminfoEntry> e;
  Meminfo("MemTotal:       15523100 kB\nHugePages_Total:       0\nNvMapMemUsed: 123 kB\n", e);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].key, "MemTotal");
  EXPECT_EQ(e[0].kib, 15523100);
  EXPECT_EQ(e[1].key, "NvMapMemUsed");
}

TEST(ParseMeminfo, ValuesOfSomeKeysAgreeWithTheEntries) {
  for (const char* board : {"agx-orin", "x86-laptop", "tx2", "no-sensors"}) {
    std::ifstream in(edgemon::testing::FixturesDir() + "/" + board + "/proc/meminfo");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<MeminfoEntry> entries;
    Meminfo(text, entries);
    ASSERT_FALSE(entries.empty()) << board;
    const std::array<std::string_view, 4> keys = {"MemTotal", "SwapFree", "NvMapMemUsed",
                                                  "HugePages_Total"};
    std::array<std::optional<int64_t>, 4> values;
    MeminfoValues(text, keys, values);
    for (size_t i = 0; i < keys.size(); ++i) {
      std::optional<int64_t> want;
      for (const auto& e : entries) {
        if (e.key == keys[i]) want = e.kib;
      }
      EXPECT_EQ(values[i], want) << board << " " << keys[i];
    }
  }
}

TEST(ParseMeminfo, ValuesTakeTheLastSizeOfAKeyAndLeaveMissingKeysAlone) {
  const std::array<std::string_view, 3> keys = {"Cached", "Buffers", "Absent"};
  std::array<std::optional<int64_t>, 3> values = {std::nullopt, std::nullopt, 7};
  MeminfoValues(
      "Cached: 10 kB\nSwapCached: 99 kB\n Buffers :  20 kB\nCached: 30 kB\n"
      "Cached: 40\nBuffers: x kB\n",
      keys, values);
  EXPECT_EQ(values[0], 30);  // "Cached: 40" has no unit: not a size
  EXPECT_EQ(values[1], 20);
  EXPECT_EQ(values[2], 7);
}

TEST(ParseProcPid, StatusResidentSetRealUidAndGroups) {
  auto st = ProcPidStatus(
      "Name:\tfake-bench\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t0\t0\t0\n"
      "Gid:\t1000\t1000\t1000\t1000\nGroups:\t4 24 997 \nVmPeak:\t   9000 kB\n"
      "VmRSS:\t    5120 kB\nThreads:\t1\n");
  EXPECT_EQ(st.rss_kib, std::optional<uint64_t>(5120));
  EXPECT_EQ(st.uid, std::optional<uint32_t>(1000));
  EXPECT_EQ(st.groups, std::optional(std::vector<uint32_t>{4, 24, 997}));
  // No supplementary groups: present and empty; a bad entry ends the list.
  EXPECT_EQ(ProcPidStatus("Groups:\t\n").groups, std::optional(std::vector<uint32_t>{}));
  EXPECT_EQ(ProcPidStatus("Groups:\t5 x 7\n").groups, std::optional(std::vector<uint32_t>{5}));
  // A kernel thread has no VmRSS: absent, never 0.
  st = ProcPidStatus("Name:\tkworker/0:1\nUid:\t0\t0\t0\t0\n");
  EXPECT_FALSE(st.rss_kib);
  EXPECT_EQ(st.uid, std::optional<uint32_t>(0));
  st = ProcPidStatus("Uid:\tx\nVmRSS:\t12 pages\nVmRSS:\t-5 kB\n");
  EXPECT_FALSE(st.rss_kib);
  EXPECT_FALSE(st.uid);
  st = ProcPidStatus("");
  EXPECT_FALSE(st.rss_kib);
  EXPECT_FALSE(st.uid);
  EXPECT_FALSE(st.groups);
}

TEST(ParseProcPid, CmdlineJoinsArgumentsWithSpaces) {
  using namespace std::string_literals;
  EXPECT_EQ(ProcPidCmdline("fake-bench\0--run\0001\0"s), "fake-bench --run 1");
  EXPECT_EQ(ProcPidCmdline("a\0\0b\0\0\0"s), "a  b");  // an empty argument stays
  EXPECT_EQ(ProcPidCmdline("sh -c x"), "sh -c x");     // a rewritten title
  EXPECT_EQ(ProcPidCmdline(""), "");                   // a kernel thread
  EXPECT_EQ(ProcPidCmdline("\0\0"s), "");
}

TEST(ParsePasswd, UidToNameSkippingCommentsAndMalformedLines) {
  auto users = Passwd(
      "# users\n"
      "root:x:0:0:root:/root:/bin/bash\n"
      "\n"
      "bench:x:1000:1000:Bench,,,:/home/bench:/bin/sh\n"
      "  # indented comment:x:7:\n"
      "short:x\n"
      ":x:1001:1001::/:/bin/false\n"
      "neg:x:-1:0::/:\n"
      "word:x:abc:0::/:\n"
      "other:x:1000:1000::/:\n"  // a second name for 1000: the first wins
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin");
  EXPECT_EQ(users.size(), 3u);
  EXPECT_EQ(users.at(0), "root");
  EXPECT_EQ(users.at(1000), "bench");
  EXPECT_EQ(users.at(65534), "nobody");
  EXPECT_TRUE(Passwd("").empty());
  EXPECT_TRUE(Passwd("garbage\n\n::::\n").empty());
}

TEST(ParseBuddyinfo, LargestNonEmptyOrderOverZones) {
  auto lfb = BuddyinfoLargestFree(
      "Node 0, zone      DMA      1      1      1      0      2      1      1      0      1      1 "
      "     3\n"
      "Node 0, zone   Normal    300    200    100     50     20      8      4      2      1      0 "
      "     2\n");
  ASSERT_TRUE(lfb);
  EXPECT_EQ(lfb->order, 10);
  EXPECT_EQ(lfb->blocks, 5);
  EXPECT_FALSE(BuddyinfoLargestFree("garbage"));
}

TEST(ParseSwaps, Rows) {
  auto s = Swaps(
      "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
      "/dev/zram0                              partition\t1982296\t\t1024\t\t5\n"
      "/swapfile                               file\t\t2097148\t\t0\t\t-2\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "/dev/zram0");
  EXPECT_EQ(s[0].size_kib, 1982296);
  EXPECT_EQ(s[0].used_kib, 1024);
  EXPECT_EQ(s[1].type, "file");
}

TEST(ParseSwaps, ANumberIsTheWholeTokenWithAtMostOnePlus) {
  std::vector<SwapEntry> s = {{"stale", "file", 1, 1}};
  Swaps(
      "Filename Type Size Used Priority\n"
      "/dev/zram0 partition +100 5 5\n"
      "/dev/zram1 partition 12x 5 5\n"
      "/dev/zram2 partition ++7 5 5\n"
      "/dev/zram3 partition 7 -1 5\n"
      "/dev/zram4 partition 9\n"
      "/dev/zram5 partition 8\t+\n",
      s);
  ASSERT_EQ(s.size(), 1u);  // cleared first, then only the first row is whole
  EXPECT_EQ(s[0].name, "/dev/zram0");
  EXPECT_EQ(s[0].size_kib, 100);
  EXPECT_EQ(s[0].used_kib, 5);
  // Buddyinfo's counts stop at the first token that is not a number.
  auto lfb = BuddyinfoLargestFree("Node 0, zone Normal 1 +2 3x 4\n");
  ASSERT_TRUE(lfb);
  EXPECT_EQ(lfb->order, 1);
  EXPECT_EQ(lfb->blocks, 2);
}

TEST(ParseL4t, Release) {
  EXPECT_EQ(L4tRelease("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: "
                       "aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"),
            "36.4.3");
  EXPECT_EQ(L4tRelease("# R32 (release), REVISION: 7.1, GCID: 29818004\n"), "32.7.1");
  EXPECT_FALSE(L4tRelease("nonsense"));
}

TEST(ParseNvpmodel, StatusAndConf) {
  EXPECT_EQ(NvpmodelStatus("pmode:0002\n"), 2);
  EXPECT_FALSE(NvpmodelStatus("pmode:"));
  auto conf = Nvpmodel(
      "< POWER_MODEL ID=0 NAME=15W >\nCPU_ONLINE CORE_0 1\n< POWER_MODEL ID=1 NAME=25W >\n"
      "< PM_CONFIG DEFAULT=1 >\n");
  ASSERT_EQ(conf.modes.size(), 2u);
  EXPECT_EQ(conf.modes[1].second, "25W");
  EXPECT_EQ(conf.default_id, 1);
}

TEST(ParsePpDpm, StarredLevel) {
  EXPECT_EQ(PpDpmCurrentMhz("0: 300Mhz\n1: 1000Mhz *\n"), 1000);
  EXPECT_FALSE(PpDpmCurrentMhz("0: 300Mhz\n"));
}

TEST(ParseDt, Strings) {
  using namespace std::string_literals;
  auto v = DtStrings("nvidia,p3768-0000+p3767-0005\0nvidia,tegra234\0"s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1], "nvidia,tegra234");
}

TEST(ParseCpuinfo, Model) {
  EXPECT_EQ(CpuModel("processor\t: 0\nmodel name\t: Intel(R) Core(TM) i7\n"),
            "Intel(R) Core(TM) i7");
  EXPECT_EQ(CpuModel("Hardware\t: NVIDIA Tegra\n"), "NVIDIA Tegra");
  EXPECT_EQ(CpuModel(""), "");
}

TEST(ParseNvmap, IovmmMapsOfTheAgxOrinFixture) {
  std::ifstream in(testing::Fixture("agx-orin") + "/sys/kernel/debug/nvmap/iovmm/maps");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto maps = NvmapIovmmMaps(text.str());
  ASSERT_TRUE(maps);
  EXPECT_EQ(maps->total_kib, 243752u);
  // By pid; pid 4242's two clients summed; the kernel's client (pid 0) left out;
  // handle and mapping rows (indented) are not clients.
  ASSERT_EQ(maps->clients.size(), 3u);
  EXPECT_EQ(maps->clients[0].pid, 1211);
  EXPECT_EQ(maps->clients[0].process, "nvargus-daemon");
  EXPECT_EQ(maps->clients[0].kib, 12288u);
  EXPECT_EQ(maps->clients[1].pid, 1878);
  EXPECT_EQ(maps->clients[2].pid, 4242);
  EXPECT_EQ(maps->clients[2].process, "fake-bench");
  EXPECT_EQ(maps->clients[2].kib, 196608u + 4096u);
}

TEST(ParseNvmap, ProcessNamesWithSpacesAndMalformedTables) {
  auto maps = NvmapIovmmMaps(
      "CLIENT PROCESS PID SIZE\n"
      "user        Web Content     77       100K\n"
      "user        x     -3       100K\n"  // no such pid
      "user        y     12       100M\n"  // not a KiB size
      "total    100K\n"
      "user        late     13       5K\n");  // after the total: ignored
  ASSERT_TRUE(maps);
  ASSERT_EQ(maps->clients.size(), 1u);
  EXPECT_EQ(maps->clients[0].process, "Web Content");
  EXPECT_EQ(maps->clients[0].kib, 100u);
  EXPECT_FALSE(NvmapIovmmMaps(""));
  EXPECT_FALSE(NvmapIovmmMaps("user a 1 5K\ntotal 5K\n"));                 // no header
  EXPECT_FALSE(NvmapIovmmMaps("CLIENT PROCESS PID SIZE\nuser a 1 5K\n"));  // cut short
  EXPECT_FALSE(NvmapIovmmMaps("CLIENT PROCESS PID SIZE\ntotal lots\n"));
}

TEST(ParseStrings, LowerAndUpperAreAsciiOnly) {
  EXPECT_EQ(Lower("VDD_IN Sum"), "vdd_in sum");
  EXPECT_EQ(Lower("\xc3\x89T\xc3\x89"), "\xc3\x89t\xc3\x89");  // bytes >= 0x80 untouched
  EXPECT_EQ(Lower(""), "");
  EXPECT_EQ(Upper("nvenc1 @z{"), "NVENC1 @Z{");
}

TEST(ParseInaLabel, UnusedChannelsAndTheShuntSum) {
  for (const char* unused : {"NC", "nc\n", " (NC) ", "N/C", "n/c", "", "  \n",
                             "sum of shunt voltages", "Sum of shunt voltages\n"}) {
    EXPECT_TRUE(IsUnusedInaLabel(unused)) << "'" << unused << "'";
  }
  for (const char* rail : {"VDD_IN", "VDD_SYNC", "NCPU", "VDD_NC_5V", "NC1", "shunt",
                           "VDDQ_VDD2_1V8AO", "POM_5V_IN", "sum of shunt voltages 2"}) {
    EXPECT_FALSE(IsUnusedInaLabel(rail)) << "'" << rail << "'";
  }
}

}  // namespace
}  // namespace edgemon::parse
