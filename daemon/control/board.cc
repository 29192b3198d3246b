#include "daemon/control/board.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
using Last = ConfinedRoot::Last;

// Logical paths of the entries of `dir` whose names start with `prefix`, sorted.
std::vector<std::string> SortedEntries(const ConfinedRoot& root, const std::string& dir,
                                       const std::string& prefix) {
  std::vector<std::string> out;
  auto names = root.List(dir);
  if (!names.ok()) return out;
  for (const auto& n : *names) {
    if (n.rfind(prefix, 0) == 0) out.push_back(JoinPath(dir, n));
  }
  return out;
}

// A config or status file of the board (followed when it is a link inside
// the root: a Jetson's /etc/nvpmodel.conf is one).
std::optional<std::string> ReadConfig(const ConfinedRoot& root, const std::string& path) {
  auto text = root.ReadText(path, ConfinedRoot::kMaxRead, Last::kFollow);
  if (!text.ok()) return std::nullopt;
  return std::move(*text);
}

// A value file (pwm, cpufreq, devfreq, hwmon name): never through a final link.
std::optional<std::string> ReadAttribute(const ConfinedRoot& root, const std::string& path) {
  auto text = root.ReadText(path, 4096, Last::kNoFollow);
  if (!text.ok()) return std::nullopt;
  return std::move(*text);
}

// A jetson_clocks store named by a plan: a file directly in the state
// directory, as PlanClocks names it (a state file cannot point the tool's
// --store or --restore elsewhere).
Status CheckStore(const std::string& store, const std::string& state_dir) {
  static const std::regex name(R"(jetson_clocks-[0-9a-f]{1,32}\.conf)");
  if (DirName(store) != state_dir || !std::regex_match(std::string(BaseName(store)), name)) {
    return Status::FailedPrecondition("jetson_clocks store " + store + " is not a store file in " +
                                      state_dir + "; not used");
  }
  return {};
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

BoardControl::BoardControl(std::string root, std::string state_dir)
    : root_(std::move(root)), state_(std::move(state_dir)) {}

std::string BoardControl::Path(const std::string& abs) const {
  return root_.Real(abs);
}

Result<std::optional<std::string>> BoardControl::ReadValue(const std::string& path) const {
  auto text = root_.ReadText(path, 4096, Last::kNoFollow);
  if (text.ok()) {
    // A value is ASCII text ("128\n", "performance\n"); anything else
    // could not even be kept in the state file to restore it.
    if (std::any_of(text->begin(), text->end(), [](char c) {
          return static_cast<unsigned char>(c) >= 0x7f ||
                 (static_cast<unsigned char>(c) < 0x20 && !text::IsSpace(c));
        })) {
      return Status::FailedPrecondition("refusing " + Path(path) + ": it holds no text value");
    }
    return std::optional<std::string>(std::move(*text));
  }
  if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
  return Status::FailedPrecondition("refusing " + text.status().message());
}

std::vector<PowerModeInfo> BoardControl::Modes() const {
  std::vector<PowerModeInfo> modes;
  auto text = ReadConfig(root_, EtcPath("nvpmodel.conf"));
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
  auto text = ReadConfig(root_, EtcPath("nvpmodel.conf"));
  std::smatch m;
  static const std::regex def(R"(<\s*PM_CONFIG\s+DEFAULT=(\d+)\s*>)");
  if (text && std::regex_search(*text, m, def)) return std::atoi(m[1].str().c_str());
  return std::nullopt;
}

std::optional<int> BoardControl::CurrentMode() const {
  auto text = ReadConfig(root_, VarLibPath("nvpmodel/status"));
  std::smatch m;
  static const std::regex pmode(R"(pmode:(\d+))");
  if (text && std::regex_search(*text, m, pmode)) return std::atoi(m[1].str().c_str());
  return std::nullopt;
}

std::string BoardControl::FindTool(const std::string& name) const {
  std::vector<std::string> dirs = {"/usr/sbin", "/usr/bin"};
  if (root_.root() == "/") {
    if (const char* path = std::getenv("PATH")) {
      std::istringstream in(path);
      std::string d;
      while (std::getline(in, d, ':')) {
        if (!d.empty()) dirs.push_back(d);
      }
    }
  }
  for (const auto& d : dirs) {
    // A regular, executable file reached inside the root (ConfinedRoot).
    const std::string p = JoinPath(d, name);
    const int fd = root_.Open(p, O_RDONLY, Last::kFollow);
    if (fd < 0) continue;
    struct stat st {};
    const bool executable = ::fstat(fd, &st) == 0 && (st.st_mode & 0111) != 0;
    ::close(fd);
    if (executable) return Path(p);
  }
  return {};
}

Status BoardControl::CheckTool(const json& plan, const std::string& name) const {
  const std::string tool = plan.at("tool").get<std::string>();
  const std::string found = FindTool(name);
  if (found.empty() || tool != found) {
    return Status::FailedPrecondition("the plan names " + tool + " but this board's " + name +
                                      " is " + (found.empty() ? "absent" : found) + "; not run");
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
                {"store", state_.root() + "/jetson_clocks-" + lease_id + ".conf"}};
    return {};
  }
  json writes = json::array();
  Status refused;
  auto add = [&](const std::string& file, const std::string& value) {
    auto old = ReadValue(file);
    if (!old.ok()) {
      if (refused.ok()) refused = old.status();
      return;
    }
    if (!*old || Trim(**old) == value) return;
    writes.push_back({{"path", file}, {"old", **old}, {"new", value + "\n"}});
  };
  bool any = false;
  auto lock = [&](const std::string& dir, const char* governors, const char* governor,
                  const char* min, const char* max) {
    auto top = ReadValue(JoinPath(dir, max));
    if (!top.ok()) {
      if (refused.ok()) refused = top.status();
      return;
    }
    if (!*top) return;
    any = true;
    auto available = ReadAttribute(root_, JoinPath(dir, governors));
    if (available && Contains(*available, "performance"))
      add(JoinPath(dir, governor), "performance");
    add(JoinPath(dir, min), std::string(Trim(**top)));
  };
  for (const auto& p : SortedEntries(root_, SysPath("devices/system/cpu/cpufreq"), "policy")) {
    lock(p, "scaling_available_governors", "scaling_governor", "scaling_min_freq",
         "scaling_max_freq");
  }
  for (const auto& d : SortedEntries(root_, SysPath("class/devfreq"), "")) {
    lock(d, "available_governors", "governor", "min_freq", "max_freq");
  }
  if (!refused.ok()) return refused;
  if (!any) {
    return Status::Unimplemented("no cpufreq or devfreq clocks found under " + root_.root());
  }
  for (const auto& f : Fans()) add(f.pwm_path, "255");
  if (!refused.ok()) return refused;
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
    auto old = ReadValue(f.pwm_path);
    if (!old.ok()) return old.status();
    if (!*old) continue;
    writes.push_back({{"path", f.pwm_path}, {"old", **old}, {"new", std::to_string(pwm) + "\n"}});
  }
  if (writes.empty()) {
    return Status::InvalidArgument("no fan '" + fan + "' (fans: " + names + ")");
  }
  *restore = {{"type", "writes"}, {"what", "fan"}, {"writes", writes}};
  return {};
}

std::string BoardControl::UndoWrites(const json& writes, size_t count) const {
  std::string failed;
  for (size_t j = count; j-- > 0;) {
    const std::string& path = writes.at(j).at("path").get_ref<const std::string&>();
    if (Status e = root_.WriteText(path, writes.at(j).at("old").get<std::string>()); !e.ok()) {
      failed += " " + Path(path) + " (" + e.message() + ")";
    }
  }
  return failed;
}

Status BoardControl::WriteFiles(const json& writes) {
  for (size_t i = 0; i < writes.size(); ++i) {
    const auto& w = writes.at(i);
    Status written =
        root_.WriteText(w.at("path").get<std::string>(), w.at("new").get<std::string>());
    if (written.ok()) continue;
    std::string message = "writing " + std::string(Trim(w.at("new").get<std::string>())) + " to " +
                          Path(w.at("path").get<std::string>()) +
                          " was refused: " + written.message();
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
    if (Status checked = CheckTool(plan, "nvpmodel"); !checked.ok()) return checked;
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
    if (Status checked = CheckTool(plan, "jetson_clocks"); !checked.ok()) return checked;
    const std::string tool = plan.at("tool").get<std::string>();
    const std::string store = plan.at("store").get<std::string>();
    if (Status checked = CheckStore(store, state_.root()); !checked.ok()) return checked;
    std::error_code ec;
    fs::create_directories(state_.root(), ec);
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
    if (Status checked = CheckTool(plan, "nvpmodel"); !checked.ok()) return checked;
    return RunTool({plan.at("tool").get<std::string>(), "-m", std::to_string(from)}, &out);
  }
  if (type == "jetson_clocks") {
    const std::string store = plan.at("store").get<std::string>();
    if (Status checked = CheckStore(store, state_.root()); !checked.ok()) return checked;
    const int fd = state_.Open(BaseName(store), O_RDONLY, Last::kNoFollow);
    if (fd == -ENOENT) return Status::Ok();  // killed before --store wrote it: nothing changed
    if (fd < 0) return Status::FailedPrecondition(store + ": " + state_.Why(fd));
    ::close(fd);
    if (Status checked = CheckTool(plan, "jetson_clocks"); !checked.ok()) return checked;
    std::error_code ec;
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
  for (const auto& h : SortedEntries(root_, SysPath("class/hwmon"), "hwmon")) {
    auto name = ReadAttribute(root_, JoinPath(h, "name"));
    for (const auto& p : SortedEntries(root_, h, "pwm")) {
      if (!std::regex_match(std::string(BaseName(p)), pwm_name)) continue;
      FanInfo f;
      f.name = name ? std::string(Trim(*name)) : std::string(BaseName(h));
      if (int n = ++seen[f.name]; n > 1) f.name += fmt::format("-{}", n);
      f.pwm_path = p;
      if (auto v = ReadAttribute(root_, f.pwm_path); v && !Trim(*v).empty()) {
        f.pwm = std::atoi(std::string(Trim(*v)).c_str());
      }
      fans.push_back(std::move(f));
    }
  }
  return fans;
}

bool BoardControl::ClocksLocked() const {
  auto policies = SortedEntries(root_, SysPath("devices/system/cpu/cpufreq"), "policy");
  if (policies.empty()) return false;
  for (const auto& p : policies) {
    auto lo = ReadAttribute(root_, JoinPath(p, "scaling_min_freq"));
    auto hi = ReadAttribute(root_, JoinPath(p, "scaling_max_freq"));
    if (!lo || !hi || Trim(*lo) != Trim(*hi)) return false;
  }
  return true;
}

}  // namespace edgemon::control
