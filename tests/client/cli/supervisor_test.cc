// The process side of edgemon record, with real child processes (/bin/sh):
// exit codes, a child killed by a signal, signals sent to this process
// forwarded to the child (and those the child sends not), the processes a
// command leaves behind waited for, and $PATH resolution.
#include "client/cli/supervisor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace edgemon::cli {
namespace {

// Realtime that moves one second at every reading, so a later reading is
// always a later time.
class TickingClock final : public Clock {
 public:
  int64_t MonotonicNs() override { return now_; }
  int64_t BoottimeNs() override { return now_; }
  int64_t RealtimeNs() override { return now_ += 1'000'000'000; }
  void WaitUntil(int64_t, std::unique_lock<std::mutex>&, std::condition_variable&) override {}

 private:
  int64_t now_ = 1'700'000'000'000'000'000;
};

std::vector<std::string> Environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

// Runs `script` with /bin/sh -c.
ChildExit RunShell(const std::string& script, bool wait_descendants = false) {
  TickingClock clock;
  Supervisor supervisor(clock, wait_descendants);
  EXPECT_EQ(supervisor.Start("/bin/sh", {"sh", "-c", script}, Environment(), false), 0);
  return supervisor.Wait();
}

TEST(Supervisor, ReportsTheExitCode) {
  ChildExit exit = RunShell("exit 3");
  ASSERT_TRUE(exit.exit_code.has_value());
  EXPECT_EQ(*exit.exit_code, 3);
  EXPECT_FALSE(exit.signal.has_value());
  EXPECT_EQ(exit.Status(), 3);
  EXPECT_EQ(exit.forwarded_signal, 0);
  EXPECT_EQ(RunShell("true").Status(), 0);
}

TEST(Supervisor, ReportsAChildKilledByASignalAsSuch) {
  ChildExit exit = RunShell("kill -KILL $$");
  ASSERT_TRUE(exit.signal.has_value());
  EXPECT_EQ(*exit.signal, SIGKILL);
  EXPECT_FALSE(exit.exit_code.has_value());
  EXPECT_EQ(exit.Status(), 128 + SIGKILL);
  EXPECT_EQ(exit.forwarded_signal, 0);  // nobody forwarded it
}

// SIGTERM sent to this process reaches the child, which exits 42 from its
// trap; its stdout passes through a pipe to the callback. The signal is sent
// once the child says its trap is set.
TEST(Supervisor, ForwardsASignalSentToThisProcess) {
  TickingClock clock;
  Supervisor supervisor(clock, true);
  ASSERT_EQ(supervisor.Start("/bin/sh",
                             {"sh", "-c",
                              "trap 'echo caught; exit 42' TERM; echo ready; "
                              "while :; do sleep 0.1; done"},
                             Environment(), true),
            0);
  std::string out;
  bool sent = false;
  ChildExit exit = supervisor.Wait([&](std::string_view chunk) {
    out += chunk;
    if (!sent && out.find("ready\n") != std::string::npos) {
      sent = true;
      kill(getpid(), SIGTERM);
    }
  });
  EXPECT_TRUE(sent) << out;
  EXPECT_EQ(exit.forwarded_signal, SIGTERM);
  ASSERT_TRUE(exit.exit_code.has_value()) << "signal " << exit.signal.value_or(0);
  EXPECT_EQ(*exit.exit_code, 42);
  EXPECT_EQ(out, "ready\ncaught\n");
}

// A signal forwarded to a child that does not catch it: the child is
// reported killed by it.
TEST(Supervisor, AForwardedSignalThatKillsTheChildIsReported) {
  TickingClock clock;
  Supervisor supervisor(clock, false);
  ASSERT_EQ(supervisor.Start("/bin/sh", {"sh", "-c", "echo ready; while :; do sleep 0.1; done"},
                             Environment(), true),
            0);
  bool sent = false;
  ChildExit exit = supervisor.Wait([&](std::string_view chunk) {
    if (!sent && chunk.find("ready") != std::string_view::npos) {
      sent = true;
      kill(getpid(), SIGHUP);
    }
  });
  EXPECT_EQ(exit.forwarded_signal, SIGHUP);
  ASSERT_TRUE(exit.signal.has_value());
  EXPECT_EQ(*exit.signal, SIGHUP);
  EXPECT_EQ(exit.Status(), 128 + SIGHUP);
}

// What the command sends to edgemon itself is not sent back to it.
TEST(Supervisor, DoesNotForwardWhatTheChildSendsToThisProcess) {
  ChildExit exit = RunShell("kill -INT $PPID; exit 5");
  EXPECT_EQ(exit.forwarded_signal, 0);
  ASSERT_TRUE(exit.exit_code.has_value());
  EXPECT_EQ(*exit.exit_code, 5);
}

// The forwarding lasts while the Supervisor does; then the defaults are back.
TEST(Supervisor, RestoresTheDefaultDispositions) {
  struct sigaction sa {};
  {
    TickingClock clock;
    Supervisor supervisor(clock, false);
    sigaction(SIGTERM, nullptr, &sa);
    EXPECT_NE(sa.sa_handler, SIG_DFL);
    supervisor.StopForwarding();
    sigaction(SIGTERM, nullptr, &sa);
    EXPECT_EQ(sa.sa_handler, SIG_DFL);
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    sigaction(sig, nullptr, &sa);
    EXPECT_EQ(sa.sa_handler, SIG_DFL) << sig;
  }
}

// A process the command leaves behind (it runs until the command has been
// reaped) is reparented here, waited for and counted; the last exit is later
// than the command's.
TEST(Supervisor, WaitsForWhatTheCommandLeavesBehind) {
  ChildExit exit =
      RunShell("p=$$; (while kill -0 $p 2>/dev/null; do sleep 0.01; done) & exit 0", true);
  ASSERT_TRUE(exit.waited_descendants) << "the kernel refused PR_SET_CHILD_SUBREAPER";
  EXPECT_EQ(exit.Status(), 0);
  EXPECT_EQ(exit.outlived, 1);
  EXPECT_GT(exit.last_exit_ns, exit.command_exit_ns);
  // Nothing left behind: the last exit is the command's.
  exit = RunShell("exit 0", true);
  EXPECT_EQ(exit.outlived, 0);
  EXPECT_EQ(exit.last_exit_ns, exit.command_exit_ns);
}

TEST(Supervisor, StartReportsACommandThatCannotRun) {
  TickingClock clock;
  Supervisor supervisor(clock, false);
  EXPECT_EQ(supervisor.Start("/nonexistent/edgemon-test-command", {"x"}, Environment(), false),
            ENOENT);
}

TEST(ResolveCommand, SearchesThePathAndSaysWhyNot) {
  std::string path;
  ASSERT_EQ(ResolveCommand("sh", &path), 0);
  EXPECT_TRUE(path.ends_with("/sh")) << path;
  EXPECT_EQ(access(path.c_str(), X_OK), 0);
  EXPECT_EQ(ResolveCommand("edgemon-no-such-command-x", &path), ENOENT);
  EXPECT_EQ(ResolveCommand("", &path), ENOENT);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("edgemon_supervisor_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_EQ(ResolveCommand(dir.string(), &path), EISDIR);
  const auto file = dir / "not-executable";
  std::ofstream(file) << "#!/bin/sh\n";
  chmod(file.c_str(), 0644);
  EXPECT_EQ(ResolveCommand(file.string(), &path), EACCES);
  EXPECT_EQ(path, file.string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace edgemon::cli
