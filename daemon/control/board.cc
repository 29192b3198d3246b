#include "daemon/control/board.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "daemon/collect/sysfs.h"
#include "edgemon/text.h"

namespace edgemon::control {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kToolTimeoutMs = 60'000;

using text::Trim;

std::vector<fs::path> SortedEntries(const std::string& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Contains(const std::string& words, const std::string& word) {
  std::istringstream in(words);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return text;
}

Status WriteText(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Status::Unavailable(std::strerror(errno));
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = n < 0 ? errno : (static_cast<size_t>(n) != text.size() ? EIO : 0);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err == 0 ? Status::Ok() : Status::Unavailable(std::strerror(err));
}

BoardControl::BoardControl(std::string root, std::string state_dir)
    : root_(root == "/" ? "" : std::move(root)), state_dir_(std::move(state_dir)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string BoardControl::Path(const std::string& abs) const {
  return root_ + abs;
}

std::vector<PowerModeInfo> BoardControl::Modes() const {
  std::vector<PowerModeInfo> modes;
  auto text = ReadText(Path(EtcPath("nvpmodel.conf")));
  if (!text) return modes;
  static const std::regex header(R"(^\s*<\s*POWER_MODEL\s+ID=(\d+)\s+NAME=(\S+)\s*>)");
  static const std::regex mask(R"(^\s*TPC_POWER_GATING\s+TPC_PG_MASK\s+(\d+))");
  std::istringstream in(*text);
  std::string line;
  bool in_model = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      modes.push_back({std::atoi(m[1].str().c_str()), m[2].str(), std::nullopt});
      in_model = true;
    } else if (Trim(line).rfind('<', 0) == 0) {
      in_model = false;
    } else if (in_model && std::regex_search(line, m, mask)) {
      modes.back().tpc_pg_mask = std::atoll(m[1].str().c_str());
    }
  }
  return modes;
}

std::optional<int> BoardControl::DefaultMode() const {
  auto text = ReadText(Path(EtcPath("nvpmodel.conf")));
  std::smatch m;
  static const std::regex def(R"(<\s*PM_CONFIG\s+DEFAULT=(\d+)\s*>)");
  if (text && std::regex_search(*text, m, def)) return std::atoi(m[1].str().c_str());
  return std::nullopt;
}

std::optional<int> BoardControl::CurrentMode() const {
  auto text = ReadText(Path(VarLibPath("nvpmodel/status")));
  std::smatch m;
  static const std::regex pmode(R"(pmode:(\d+))");
  if (text && std::regex_search(*text, m, pmode)) return std::atoi(m[1].str().c_str());
  return std::nullopt;
}

std::string BoardControl::FindTool(const std::string& name) const {
  std::vector<std::string> dirs = {Path("/usr/sbin"), Path("/usr/bin")};
  if (root_.empty()) {
    if (const char* path = std::getenv("PATH")) {
      std::istringstream in(path);
      std::string d;
      while (std::getline(in, d, ':')) {
        if (!d.empty()) dirs.push_back(d);
      }
    }
  }
  for (const auto& d : dirs) {
    std::string p = d + "/" + name;
    if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p;
  }
  return {};
}

std::string BoardControl::NvpmodelTool() const {
  return FindTool("nvpmodel");
}
std::string BoardControl::JetsonClocksTool() const {
  return FindTool("jetson_clocks");
}

Status BoardControl::RunTool(const std::vector<std::string>& argv, std::string* output) const {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return Status::Aborted(std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char env_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {env_path, nullptr};
  pid_t pid = ::fork();
  if (pid < 0) return Status::Aborted(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipefd[1], 1);
    ::dup2(pipefd[1], 2);
    ::execve(args[0], args.data(), envp);
    _exit(127);
  }
  ::close(pipefd[1]);
  output->clear();
  // A tool that hangs must not hold every lease hostage: killed after kToolTimeoutMs.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kToolTimeoutMs);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{pipefd[0], POLLIN, 0};
    int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output->size() < (1 << 20)) output->append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string cmd = argv[0];
  for (size_t i = 1; i < argv.size(); ++i) cmd += " " + argv[i];
  if (timed_out) {
    return Status::Aborted(cmd + " did not finish within " + std::to_string(kToolTimeoutMs / 1000) +
                           " s; killed");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string out(Trim(*output));
    std::replace(out.begin(), out.end(), '\n', ' ');
    return Status::Aborted(cmd + " failed (" +
                           (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status))) +
                           (out.empty() ? ")" : "): " + out));
  }
  return {};
}

Status BoardControl::PlanMode(int id, json* restore) const {
  auto modes = Modes();
  if (modes.empty()) {
    return Status::Unimplemented("this board has no power modes (no " +
                                 Path(EtcPath("nvpmodel.conf")) + ")");
  }
  auto it = std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.id == id; });
  if (it == modes.end()) {
    std::string known;
    for (const auto& m : modes) {
      known += (known.empty() ? "" : ", ") + std::to_string(m.id) + " " + m.name;
    }
    return Status::InvalidArgument("unknown power mode " + std::to_string(id) +
                                   " (modes: " + known + ")");
  }
  std::string tool = NvpmodelTool();
  if (tool.empty()) {
    return Status::Unimplemented("no nvpmodel tool on this board (looked in " + Path("/usr/sbin") +
                                 " and " + Path("/usr/bin") + ")");
  }
  auto current = CurrentMode();
  if (current) {
    auto cur =
        std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.id == *current; });
    if (cur != modes.end() && cur->tpc_pg_mask.value_or(0) != it->tpc_pg_mask.value_or(0)) {
      return Status::FailedPrecondition("power mode " + std::to_string(id) + " (" + it->name +
                                        ") needs a reboot (its TPC_PG_MASK differs from mode " +
                                        std::to_string(*current) +
                                        "); edgemon-control never reboots: run nvpmodel -m " +
                                        std::to_string(id) + " yourself and reboot");
    }
  }
  *restore = {{"type", "mode"}, {"tool", tool}, {"to", id}, {"name", it->name}};
  if (current) (*restore)["from"] = *current;
  return {};
}

Status BoardControl::PlanClocks(const std::string& lease_id, json* restore) const {
  if (std::string tool = JetsonClocksTool(); !tool.empty()) {
    *restore = {{"type", "jetson_clocks"},
                {"tool", tool},
                {"store", state_dir_ + "/jetson_clocks-" + lease_id + ".conf"}};
    return {};
  }
  json writes = json::array();
  auto add = [&](const fs::path& file, const std::string& value) {
    auto old = ReadText(file.string());
    if (!old || Trim(*old) == value) return;
    writes.push_back({{"path", file.string()}, {"old", *old}, {"new", value + "\n"}});
  };
  bool any = false;
  auto lock = [&](const fs::path& dir, const char* governors, const char* governor, const char* min,
                  const char* max) {
    auto top = ReadText((dir / max).string());
    if (!top) return;
    any = true;
    auto available = ReadText((dir / governors).string());
    if (available && Contains(*available, "performance")) add(dir / governor, "performance");
    add(dir / min, std::string(Trim(*top)));
  };
  for (const auto& p : SortedEntries(Path(SysPath("devices/system/cpu/cpufreq")), "policy")) {
    lock(p, "scaling_available_governors", "scaling_governor", "scaling_min_freq",
         "scaling_max_freq");
  }
  for (const auto& d : SortedEntries(Path(SysPath("class/devfreq")), "")) {
    lock(d, "available_governors", "governor", "min_freq", "max_freq");
  }
  if (!any) {
    return Status::Unimplemented("no cpufreq or devfreq clocks found under " +
                                 (root_.empty() ? std::string("/") : root_));
  }
  for (const auto& f : Fans()) add(f.pwm_path, "255");
  *restore = {{"type", "writes"}, {"what", "clocks"}, {"writes", writes}};
  return {};
}

Status BoardControl::PlanFan(const std::string& fan, int percent, json* restore) const {
  if (percent < 0 || percent > 100) {
    return Status::InvalidArgument("fan speed must be 0..100 percent, got " +
                                   std::to_string(percent));
  }
  auto fans = Fans();
  if (fans.empty()) return Status::InvalidArgument("this board has no controllable fan");
  std::string names;
  for (const auto& f : fans) names += (names.empty() ? "" : ", ") + f.name;
  json writes = json::array();
  const int pwm = static_cast<int>(std::lround(percent * 255.0 / 100.0));
  for (const auto& f : fans) {
    if (!fan.empty() && f.name != fan) continue;
    auto old = ReadText(f.pwm_path);
    if (!old) continue;
    writes.push_back({{"path", f.pwm_path}, {"old", *old}, {"new", std::to_string(pwm) + "\n"}});
  }
  if (writes.empty()) {
    return Status::InvalidArgument("no fan '" + fan + "' (fans: " + names + ")");
  }
  *restore = {{"type", "writes"}, {"what", "fan"}, {"writes", writes}};
  return {};
}

std::string BoardControl::UndoWrites(const json& writes, size_t count) {
  std::string failed;
  for (size_t j = count; j-- > 0;) {
    const std::string& path = writes.at(j).at("path").get_ref<const std::string&>();
    if (Status e = WriteText(path, writes.at(j).at("old").get<std::string>()); !e.ok()) {
      failed += " " + path + " (" + e.message() + ")";
    }
  }
  return failed;
}

Status BoardControl::WriteFiles(const json& writes) {
  for (size_t i = 0; i < writes.size(); ++i) {
    const auto& w = writes.at(i);
    Status written = WriteText(w.at("path").get<std::string>(), w.at("new").get<std::string>());
    if (written.ok()) continue;
    std::string message = "writing " + std::string(Trim(w.at("new").get<std::string>())) + " to " +
                          w.at("path").get<std::string>() + " was refused: " + written.message();
    const std::string failed = UndoWrites(writes, i);
    message += failed.empty() ? "; the " + std::to_string(i) + " earlier writes were rolled back"
                              : "; could not roll back:" + failed;
    return Status::Aborted(message);
  }
  return {};
}

Status BoardControl::Apply(const json& plan) {
  const std::string type = plan.value("type", "");
  std::string out;
  if (type == "writes") return WriteFiles(plan.at("writes"));
  if (type == "mode") {
    const int to = plan.at("to").get<int>();
    Status o = RunTool({plan.at("tool").get<std::string>(), "-m", std::to_string(to)}, &out);
    if (out.find("eboot required") != std::string::npos) {
      static_cast<void>(Restore(plan));  // the caller hears of the reboot
      return Status::FailedPrecondition("power mode " + std::to_string(to) +
                                        " needs a reboot (nvpmodel says so); edgemon-control never "
                                        "reboots: run nvpmodel -m " +
                                        std::to_string(to) + " yourself and reboot");
    }
    if (o.ok() && CurrentMode() != to) {
      o = Status::Aborted("nvpmodel -m " + std::to_string(to) +
                          " returned but the board reports mode " +
                          (CurrentMode() ? std::to_string(*CurrentMode()) : "—"));
    }
    if (!o.ok()) {
      Status left = Restore(plan);
      if (!left.ok()) o = Status(o.code(), o.message() + "; " + left.message());
    }
    return o;
  }
  if (type == "jetson_clocks") {
    const std::string tool = plan.at("tool").get<std::string>();
    const std::string store = plan.at("store").get<std::string>();
    std::error_code ec;
    fs::create_directories(fs::path(store).parent_path(), ec);
    if (Status o = RunTool({tool, "--store", store}, &out); !o.ok()) return o;
    if (Status o = RunTool({tool}, &out); !o.ok()) {
      Status left = Restore(plan);
      o = Status(o.code(),
                 o.message() + (left.ok() ? "; restored from " + store : "; " + left.message()));
      return o;
    }
    return {};
  }
  return Status::Aborted("unknown change type '" + type + "'");
}

Status BoardControl::Restore(const json& plan) {
  const std::string type = plan.value("type", "");
  std::string out;
  if (type == "writes") {
    const auto& writes = plan.at("writes");
    const std::string failed = UndoWrites(writes, writes.size());
    return failed.empty() ? Status::Ok() : Status::Aborted("could not restore:" + failed);
  }
  if (type == "mode") {
    if (!plan.contains("from")) {
      return Status::FailedPrecondition("the previous power mode was unknown; left as it is");
    }
    const int from = plan.at("from").get<int>();
    if (CurrentMode() == from) return Status::Ok();
    return RunTool({plan.at("tool").get<std::string>(), "-m", std::to_string(from)}, &out);
  }
  if (type == "jetson_clocks") {
    const std::string store = plan.at("store").get<std::string>();
    std::error_code ec;
    if (!fs::exists(store, ec))
      return Status::Ok();  // killed before --store wrote it: nothing changed
    Status o = RunTool({plan.at("tool").get<std::string>(), "--restore", store}, &out);
    if (o.ok()) fs::remove(store, ec);
    return o;
  }
  return Status::FailedPrecondition("unknown change type '" + type + "'");
}

std::vector<FanInfo> BoardControl::Fans() const {
  std::vector<FanInfo> fans;
  std::map<std::string, int> seen;
  static const std::regex pwm_name(R"(pwm\d+)");
  for (const auto& h : SortedEntries(Path(SysPath("class/hwmon")), "hwmon")) {
    auto name = ReadText((h / "name").string());
    for (const auto& p : SortedEntries(h.string(), "pwm")) {
      if (!std::regex_match(p.filename().string(), pwm_name)) continue;
      FanInfo f;
      f.name = name ? std::string(Trim(*name)) : h.filename().string();
      if (int n = ++seen[f.name]; n > 1) f.name += fmt::format("-{}", n);
      f.pwm_path = p.string();
      if (auto v = ReadText(f.pwm_path); v && !Trim(*v).empty()) {
        f.pwm = std::atoi(std::string(Trim(*v)).c_str());
      }
      fans.push_back(std::move(f));
    }
  }
  return fans;
}

bool BoardControl::ClocksLocked() const {
  auto policies = SortedEntries(Path(SysPath("devices/system/cpu/cpufreq")), "policy");
  if (policies.empty()) return false;
  for (const auto& p : policies) {
    auto lo = ReadText((p / "scaling_min_freq").string());
    auto hi = ReadText((p / "scaling_max_freq").string());
    if (!lo || !hi || Trim(*lo) != Trim(*hi)) return false;
  }
  return true;
}

}  // namespace edgemon::control
