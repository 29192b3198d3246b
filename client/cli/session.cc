#include "client/cli/session.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>

#include "edgemon/checked.h"
#include "edgemon/render.h"
#include "edgemon/text.h"

namespace edgemon::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnStopSignal(int) {
  g_stop = 1;
}

}  // namespace

std::optional<Session> OpenSession(const Globals& globals, int* exit_code) {
  std::unique_ptr<client::Client> c = ConnectOrReport(globals);
  if (c == nullptr) {
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  auto info = c->DeviceInfo();
  if (!info.ok()) {
    *exit_code = ReportFirstCall("edgemon", c->target(), info.status());
    return std::nullopt;
  }
  return Session{std::move(c), std::move(info).value()};
}

std::vector<std::string> SplitList(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t end = item.find(',', start);
      if (end == std::string::npos) end = item.size();
      std::string part = item.substr(start, end - start);
      while (!part.empty() && part.front() == ' ') part.erase(part.begin());
      while (!part.empty() && part.back() == ' ') part.pop_back();
      if (!part.empty()) out.push_back(std::move(part));
      start = end + 1;
    }
  }
  return out;
}

std::optional<std::vector<ChannelId>> SelectOrReport(std::string_view command,
                                                     const Inventory& inventory,
                                                     const std::vector<std::string>& patterns) {
  auto ids = SelectChannels(inventory, patterns);
  if (!ids.ok()) {
    // The message echoes the pattern the user gave, and may name channels.
    std::fprintf(stderr, "edgemon %.*s: %s\n", static_cast<int>(command.size()), command.data(),
                 TerminalSafe(ids.status().message()).c_str());
    return std::nullopt;
  }
  return std::move(ids).value();
}

std::vector<std::string> KeysOf(const Inventory& inventory, const std::vector<ChannelId>& ids) {
  std::vector<std::string> keys;
  for (ChannelId id : ids) {
    if (id < inventory.channels.size()) keys.push_back(inventory.channels[id].Key());
  }
  return keys;
}

Inventory Subset(const Inventory& inventory, const std::vector<ChannelId>& ids) {
  Inventory out;
  out.board = inventory.board;
  for (ChannelId id : ids) {
    if (id < inventory.channels.size()) out.channels.push_back(inventory.channels[id]);
  }
  return out;
}

std::string CompactValue(const Channel& c, const Value& v) {
  std::string s = FormatValue(c, v);
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

std::string LocalTime(int64_t realtime_ns, bool millis) {
  // Floored, so that a time before 1970 keeps its milliseconds positive;
  // exact at INT64_MIN.
  const int64_t s = FloorDiv(realtime_ns, 1'000'000'000);
  const int64_t ms = FloorMod(realtime_ns, 1'000'000'000) / 1'000'000;
  const time_t t = static_cast<time_t>(s);
  struct tm tm;
  char buf[48];
  if (localtime_r(&t, &tm) == nullptr) return std::to_string(realtime_ns);
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (millis && n > 0)
    std::snprintf(buf + n, sizeof buf - n, ".%03lld", static_cast<long long>(ms));
  return buf;
}

void InstallStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() {
  return g_stop != 0;
}

bool WriteLine(std::FILE* out, const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) return false;
  if (std::fputc('\n', out) == EOF) return false;
  return std::fflush(out) == 0;
}

int RunStream(Session& session, const client::WatchOptions& options, uint64_t count,
              const StreamHooks& hooks) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int rc = kExitOk;
  uint64_t frames = 0;
  bool lost = false;
  uint64_t generation = session.info.generation;
  auto finish = [&](int code) {
    std::lock_guard<std::mutex> lock(mu);
    if (!done) rc = code;
    done = true;
    cv.notify_all();
  };

  if (hooks.on_inventory) hooks.on_inventory(session.info);
  auto on_frame = [&](const client::LiveFrame& lf) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
    }
    if (lf.generation != generation) {
      auto info = session.client->DeviceInfo();
      if (!info.ok()) return;  // the next frame tries again
      session.info = std::move(info).value();
      generation = lf.generation;
      if (hooks.on_inventory) hooks.on_inventory(session.info);
    }
    if (std::optional<int> stop = hooks.on_frame(lf)) {
      finish(*stop);
      return;
    }
    if (count > 0 && ++frames >= count) finish(kExitOk);
  };
  auto on_state = [&](client::ConnectionState state, const Status& status) {
    if (state == client::ConnectionState::kDisconnected) {
      if (!lost) {
        std::fprintf(stderr, "edgemon: lost the daemon at %s (%s); reconnecting\n",
                     TerminalSafe(session.client->target()).c_str(),
                     TerminalSafe(status.ToString()).c_str());
      }
      lost = true;
    } else if (state == client::ConnectionState::kConnected && lost) {
      lost = false;
      std::fprintf(stderr, "edgemon: reconnected to %s\n",
                   TerminalSafe(session.client->target()).c_str());
    } else if (state == client::ConnectionState::kStopped && !status.ok()) {
      finish(ReportStatus("watch", status));
    }
  };
  std::unique_ptr<client::Watcher> watcher = session.client->Watch(options, on_frame, on_state);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!done && !StopRequested()) cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  watcher->Stop();
  std::lock_guard<std::mutex> lock(mu);
  return rc;
}

}  // namespace edgemon::cli
