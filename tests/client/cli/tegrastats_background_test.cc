// The pieces of `edgemon tegrastats --start/--stop` that decide which
// process is signalled and where the pid file lives (tegrastats_background.h).
// The whole of --start/--stop runs against a real daemon in
// tegrastats_background_e2e.py.
#include "client/cli/tegrastats_background.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace edgemon::cli {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "edgemon-bg-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A real line: a command name with spaces and parentheses of its own.
const std::string kStat =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 98765 "
    "1234567 200 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 3 0 0 0 0 0\n";

TEST(TegrastatsBackground, PidRecordRoundTrips) {
  EXPECT_EQ(FormatPidRecord({4242, 98765}), "4242 98765\n");
  auto r = ParsePidRecord("4242 98765\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pid, 4242);
  EXPECT_EQ(r->start_time, 98765u);
  // A pid alone (another program's pid file) names no process here.
  EXPECT_FALSE(ParsePidRecord("4242\n"));
  EXPECT_FALSE(ParsePidRecord("4242 98765"));  // cut short while written
  EXPECT_FALSE(ParsePidRecord(""));
  EXPECT_FALSE(ParsePidRecord("0 5\n"));
  EXPECT_FALSE(ParsePidRecord("-1 5\n"));
  EXPECT_FALSE(ParsePidRecord("12 5 6\n"));
}

TEST(TegrastatsBackground, RecordMatchesOnlyTheSameStartTime) {
  auto self = OwnRecord();
  ASSERT_TRUE(self);
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_EQ(CheckRecord(*self), RecordedProcess::kRunning);
  // The same pid, started at another time: a recycled pid, never signalled.
  EXPECT_EQ(CheckRecord({self->pid, self->start_time + 1}), RecordedProcess::kOther);

  TempDir proc;
  Write(proc.path() + "/4242/stat", kStat);
  // Its executable is this program's, as an instance's is.
  fs::create_symlink(fs::read_symlink(HostProcPath("self/exe")), proc.path() + "/4242/exe");
  EXPECT_EQ(CheckRecord({4242, 98765}, proc.path()), RecordedProcess::kRunning);
  EXPECT_EQ(CheckRecord({4242, 98764}, proc.path()), RecordedProcess::kOther);
  EXPECT_EQ(CheckRecord({4243, 98765}, proc.path()), RecordedProcess::kGone);
  // A zombie has ended, though /proc still lists it.
  std::string zombie = kStat;
  zombie.replace(zombie.find(") S ") + 2, 1, "Z");
  Write(proc.path() + "/4242/stat", zombie);
  EXPECT_EQ(CheckRecord({4242, 98765}, proc.path()), RecordedProcess::kGone);
}

TEST(TegrastatsBackground, RecordMatchesOnlyThisProgramsExecutable) {
  // The right pid and start time, but another program (a shell, a sleep of
  // the same user): never taken for an instance, never signalled.
  TempDir proc;
  Write(proc.path() + "/4242/stat", kStat);
  Write(proc.path() + "/other-program", "#!/bin/sh\n");
  fs::create_symlink(proc.path() + "/other-program", proc.path() + "/4242/exe");
  EXPECT_EQ(CheckRecord({4242, 98765}, proc.path()), RecordedProcess::kOther);
  fs::remove(proc.path() + "/4242/exe");  // unreadable (another user's process)
  EXPECT_EQ(CheckRecord({4242, 98765}, proc.path()), RecordedProcess::kOther);
}

TEST(TegrastatsBackground, RuntimeDirPrefersAPrivateXdgRuntimeDir) {
  TempDir t;
  const uid_t uid = ::getuid();
  const std::string xdg = t.path() + "/xdg";
  fs::create_directory(xdg);
  ::chmod(xdg.c_str(), 0700);
  auto dir = UserRuntimeDir(xdg.c_str(), uid, true, t.path() + "/run/user", t.path());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, xdg);

  // Open to others, or relative: skipped for /run/user/UID.
  ::chmod(xdg.c_str(), 0755);
  const std::string run_user = t.path() + "/run/user/" + std::to_string(uid);
  fs::create_directories(run_user);
  ::chmod(run_user.c_str(), 0700);
  dir = UserRuntimeDir(xdg.c_str(), uid, true, t.path() + "/run/user", t.path());
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, run_user);
  dir = UserRuntimeDir("relative/xdg", uid, true, t.path() + "/run/user", t.path());
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, run_user);
}

TEST(TegrastatsBackground, RuntimeDirFallsBackToAPrivateTmpDir) {
  TempDir t;
  const uid_t uid = ::getuid();
  const std::string own = t.path() + "/edgemon-" + std::to_string(uid);
  // Without create, a missing directory means nothing was ever started.
  auto dir = UserRuntimeDir(nullptr, uid, false, t.path() + "/none", t.path());
  EXPECT_EQ(dir.status().code(), StatusCode::kNotFound);

  dir = UserRuntimeDir(nullptr, uid, true, t.path() + "/none", t.path());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, own);
  struct stat st {};
  ASSERT_EQ(::lstat(own.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // Someone made it first and left it open: refused, not used.
  ::chmod(own.c_str(), 0777);
  dir = UserRuntimeDir(nullptr, uid, true, t.path() + "/none", t.path());
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(dir.status().message().find("0777"), std::string::npos) << dir.status().message();

  // A link to a private directory is refused too.
  fs::remove(own);
  const std::string elsewhere = t.path() + "/elsewhere";
  fs::create_directory(elsewhere);
  ::chmod(elsewhere.c_str(), 0700);
  fs::create_directory_symlink(elsewhere, own);
  dir = UserRuntimeDir(nullptr, uid, true, t.path() + "/none", t.path());
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);

  // Owned by another user (as seen from a uid that does not own it).
  fs::remove(own);
  dir = UserRuntimeDir(nullptr, uid, true, t.path() + "/none", t.path());
  ASSERT_TRUE(dir.ok());
  const std::string mine = *dir;
  dir = UserRuntimeDir(nullptr, uid + 1, false, t.path() + "/none", t.path());
  EXPECT_EQ(dir.status().code(), StatusCode::kNotFound);  // edgemon-<uid+1> does not exist
  fs::rename(mine, t.path() + "/edgemon-" + std::to_string(uid + 1));
  dir = UserRuntimeDir(nullptr, uid + 1, false, t.path() + "/none", t.path());
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(dir.status().message().find("belongs to uid"), std::string::npos);
}

TEST(TegrastatsBackground, DefaultLogfile) {
  TempDir t;
  auto log = DefaultTegrastatsLog((t.path() + "/state").c_str(), "/nonexistent-home");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(*log, t.path() + "/state/edgemon/tegrastats.log");
  EXPECT_TRUE(fs::is_directory(t.path() + "/state/edgemon"));

  log = DefaultTegrastatsLog(nullptr, t.path().c_str());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(*log, t.path() + "/.local/state/edgemon/tegrastats.log");
  EXPECT_TRUE(fs::is_directory(t.path() + "/.local/state/edgemon"));

  EXPECT_FALSE(DefaultTegrastatsLog(nullptr, nullptr).ok());
  EXPECT_FALSE(DefaultTegrastatsLog("relative", "").ok());
}

}  // namespace
}  // namespace edgemon::cli
