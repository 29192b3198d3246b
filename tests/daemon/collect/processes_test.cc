// The process list on a scratch /proc and /etc/passwd, on fake time: names
// with spaces and parentheses, processes that exit between the listing and
// the read, garbage and missing files, users passwd does not name, and the
// CPU share between two reads.
#include "daemon/collect/processes.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::FakeClock;
using testing::TempTree;

constexpr int64_t kTicksPerS = 100;

// A /proc/PID/stat line with the given comm, state and CPU ticks.
std::string StatText(int pid, const std::string& comm, char state, uint64_t utime, uint64_t stime) {
  return std::to_string(pid) + " (" + comm + ") " + state + " 1 " + std::to_string(pid) + " " +
         std::to_string(pid) + " 0 -1 4194560 120 0 0 0 " + std::to_string(utime) + " " +
         std::to_string(stime) + " 0 0 20 0 1 0 4242 12000000 1280 18446744073709551615\n";
}

std::string StatusText(const std::string& name, uint32_t uid, const std::string& rss_line) {
  return "Name:\t" + name + "\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nUid:\t" +
         std::to_string(uid) + "\t" + std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
         std::to_string(uid) + "\nGid:\t0\t0\t0\t0\n" + rss_line + "Threads:\t1\n";
}

void WriteProcess(TempTree& t, int pid, const std::string& comm, uint64_t utime, uint64_t stime,
                  uint32_t uid = 0, uint64_t rss_kib = 1024) {
  const std::string dir = "/proc/" + std::to_string(pid);
  t.Write(dir + "/stat", StatText(pid, comm, 'S', utime, stime));
  t.Write(dir + "/status", StatusText(comm, uid, "VmRSS:\t" + std::to_string(rss_kib) + " kB\n"));
  t.Write(dir + "/cmdline", comm + std::string("\0--flag\0", 8));
}

std::map<int, ProcessInfo> ByPid(const std::vector<ProcessInfo>& list) {
  std::map<int, ProcessInfo> out;
  for (const ProcessInfo& p : list) out.emplace(p.pid, p);
  return out;
}

class ProcessesTest : public ::testing::Test {
 protected:
  ProcessesTest() {
    t_.Write("/etc/passwd",
             "# local users\n"
             "root:x:0:0:root:/root:/bin/bash\n"
             "broken line without fields\n"
             "bench:x:1000:1000:Bench,,,:/home/bench:/bin/sh\n"
             "odd:x:notanumber:0::/:\n");
    t_.Write("/proc/meminfo", "MemTotal: 1000 kB\n");  // not a process
    t_.MakeDir("/proc/sys");                           // nor this
    t_.MakeDir("/proc/self");
  }

  TempTree t_;
  RootedSysFs fs_{t_.root()};
  FakeClock clock_;
  ProcessReader reader_{fs_, clock_, kTicksPerS};
};

TEST_F(ProcessesTest, ReadsNameUserStateMemoryAndCommand) {
  WriteProcess(t_, 4242, "fake-bench", 10, 5, 1000, 5120);
  auto procs = ByPid(reader_.Read());
  ASSERT_EQ(procs.size(), 1u);
  const ProcessInfo& p = procs.at(4242);
  EXPECT_EQ(p.name, "fake-bench");
  EXPECT_EQ(p.user, "bench");
  EXPECT_EQ(p.state, 'S');
  EXPECT_EQ(p.rss_kib, std::optional<uint64_t>(5120));
  EXPECT_EQ(p.command, "fake-bench --flag");
}

TEST_F(ProcessesTest, NamesMayHoldSpacesAndParentheses) {
  WriteProcess(t_, 7, "Web Content", 0, 0);
  WriteProcess(t_, 8, "a) b (c)", 0, 0);
  WriteProcess(t_, 9, ") S 1 2 3", 0, 0);
  auto procs = ByPid(reader_.Read());
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs.at(7).name, "Web Content");
  EXPECT_EQ(procs.at(8).name, "a) b (c)");
  EXPECT_EQ(procs.at(9).name, ") S 1 2 3");
  EXPECT_EQ(procs.at(9).state, 'S');
}

TEST_F(ProcessesTest, AProcessThatExitsBeforeItsStatIsReadIsLeftOut) {
  WriteProcess(t_, 10, "stays", 0, 0);
  // Listed, but gone by the time its files are read (the directory of a
  // process that exited is empty of readable files, then disappears).
  t_.MakeDir("/proc/11");
  WriteProcess(t_, 12, "exits", 0, 0);
  t_.Remove("/proc/12/stat");
  auto procs = ByPid(reader_.Read());
  EXPECT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs.count(10), 1u);
}

TEST_F(ProcessesTest, GarbageStatIsLeftOut) {
  WriteProcess(t_, 20, "fine", 0, 0);
  WriteProcess(t_, 21, "garbage", 0, 0);
  t_.Write("/proc/21/stat", "not a stat line at all\n");
  WriteProcess(t_, 22, "cut", 0, 0);
  t_.Write("/proc/22/stat", "22 (cut) S 1 22 22");
  WriteProcess(t_, 23, "empty", 0, 0);
  t_.Write("/proc/23/stat", "");
  auto procs = ByPid(reader_.Read());
  EXPECT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs.count(20), 1u);
}

TEST_F(ProcessesTest, MissingStatusLeavesMemoryAndUserAbsentNeverZero) {
  WriteProcess(t_, 30, "secretive", 0, 0);
  t_.Remove("/proc/30/status");
  WriteProcess(t_, 31, "kthreadd", 0, 0);
  t_.Write("/proc/31/status", StatusText("kthreadd", 0, ""));  // kernel threads have no VmRSS
  t_.Write("/proc/31/cmdline", "");
  auto procs = ByPid(reader_.Read());
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_FALSE(procs.at(30).rss_kib);
  EXPECT_EQ(procs.at(30).user, "");  // unknown, not root
  EXPECT_EQ(procs.at(30).name, "secretive");
  EXPECT_FALSE(procs.at(31).rss_kib);
  EXPECT_EQ(procs.at(31).user, "root");
  EXPECT_EQ(procs.at(31).command, "");
}

TEST_F(ProcessesTest, AUidPasswdDoesNotNameShowsTheNumber) {
  WriteProcess(t_, 40, "container", 0, 0, 4321);
  WriteProcess(t_, 41, "rooted", 0, 0, 0);
  auto procs = ByPid(reader_.Read());
  EXPECT_EQ(procs.at(40).user, "4321");
  EXPECT_EQ(procs.at(41).user, "root");
  // Without a passwd at all every user is a number.
  t_.Remove("/etc/passwd");
  procs = ByPid(reader_.Read());
  EXPECT_EQ(procs.at(41).user, "0");
}

TEST_F(ProcessesTest, CpuShareIsAbsentOnTheFirstReadThenMeasuredOverTheFakeClock) {
  WriteProcess(t_, 50, "busy", 100, 50);
  WriteProcess(t_, 51, "idle", 7, 3);
  WriteProcess(t_, 52, "exits", 1, 1);
  for (const ProcessInfo& p : reader_.Read()) {
    EXPECT_FALSE(p.cpu_permille) << p.pid;  // nothing to compare with yet
  }
  clock_.Advance(2'000'000'000);
  WriteProcess(t_, 50, "busy", 150, 100);  // 100 ticks = 1 s of CPU in 2 s
  t_.Remove("/proc/52");
  WriteProcess(t_, 53, "new", 500, 500);  // first seen now
  auto procs = ByPid(reader_.Read());
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs.at(50).cpu_permille, std::optional<uint32_t>(500));
  EXPECT_EQ(procs.at(51).cpu_permille, std::optional<uint32_t>(0));  // idle, measured
  EXPECT_FALSE(procs.at(53).cpu_permille);

  // A pid reused by a process with fewer ticks has no share to report.
  clock_.Advance(1'000'000'000);
  WriteProcess(t_, 50, "reused", 1, 0);
  WriteProcess(t_, 53, "new", 525, 525);  // 50 ticks in 1 s
  procs = ByPid(reader_.Read());
  EXPECT_FALSE(procs.at(50).cpu_permille);
  EXPECT_EQ(procs.at(53).cpu_permille, std::optional<uint32_t>(500));
}

TEST_F(ProcessesTest, NoTimePassedMeansNoShare) {
  WriteProcess(t_, 60, "p", 1, 1);
  reader_.Read();
  WriteProcess(t_, 60, "p", 5, 5);
  auto procs = ByPid(reader_.Read());  // the fake clock did not move
  EXPECT_FALSE(procs.at(60).cpu_permille);
}

TEST_F(ProcessesTest, NoProcAtAllIsAnEmptyList) {
  TempTree empty;
  RootedSysFs fs(empty.root());
  ProcessReader reader(fs, clock_, kTicksPerS);
  EXPECT_TRUE(reader.Read().empty());
}

}  // namespace
}  // namespace edgemon
