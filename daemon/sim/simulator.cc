#include "daemon/sim/simulator.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

namespace fs = std::filesystem;

int64_t NowNs(clockid_t clock) {
  timespec ts;
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

// ---------------------------------------------------------------------------

struct Simulator::Impl {
  SimTree tree;
  std::vector<std::unique_ptr<SimSource>> sources = MakeSimSources();

  explicit Impl(const std::string& root) : tree(root) {}

  void Discover() {
    for (auto& s : sources) s->Discover(tree);
  }

  void Step(double t) {
    if (!(t > 0)) t = 0;  // also NaN
    for (auto& s : sources) s->Step(tree, t);
  }
};

// ---------------------------------------------------------------------------

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::~Simulator() = default;

namespace {

Status CopyTree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path src = it->path();
    const fs::path dst = to / src.filename();
    const fs::file_status st = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(st)) {
      fs::path target = fs::read_symlink(src, ec);
      if (!ec) fs::create_symlink(target, dst, ec);
    } else if (fs::is_directory(st)) {
      fs::create_directory(dst, ec);
      if (!ec) {
        if (Status copied = CopyTree(src, dst); !copied.ok()) return copied;
      }
    } else if (fs::is_regular_file(st)) {
      fs::copy_file(src, dst, ec);
    }
    if (ec) return Status::Unavailable("cannot copy " + src.string() + ": " + ec.message());
  }
  if (ec) return Status::Unavailable("cannot list " + from.string() + ": " + ec.message());
  return Status::Ok();
}

// A live system tree, or the whole filesystem, must never be written.
bool IsSystemPath(const std::string& canonical) {
  if (canonical.empty() || canonical == "/") return true;
  for (const std::string& sys : {SysPath(""), ProcPath("")}) {
    if (canonical == sys || canonical.starts_with(sys + "/")) return true;
  }
  return false;
}

}  // namespace

Status Simulator::Materialise(const std::string& from, const std::string& to) {
  std::error_code ec;
  const fs::path src(from);
  const fs::path dst(to);
  if (!fs::is_directory(src, ec)) return Status::InvalidArgument(from + " is not a directory");
  if (fs::exists(fs::symlink_status(dst, ec))) {
    if (!fs::is_directory(fs::symlink_status(dst, ec))) {
      return Status::InvalidArgument(to + " exists and is not a directory");
    }
    const bool empty = fs::is_empty(dst, ec);
    if (!empty) {
      if (!fs::exists(dst / std::string(kSidecarName), ec)) {
        return Status::InvalidArgument(to + " is not empty and holds no earlier simulation (" +
                                       std::string(kSidecarName) + ")");
      }
      for (const auto& e : fs::directory_iterator(dst, ec)) fs::remove_all(e.path(), ec);
      if (ec) return Status::Unavailable("cannot clear " + to + ": " + ec.message());
    }
  } else if (!fs::create_directories(dst, ec) || ec) {
    return Status::Unavailable("cannot create " + to + ": " + ec.message());
  }
  const std::string src_c = fs::canonical(src, ec).string();
  const std::string dst_c = fs::canonical(dst, ec).string();
  if (ec || IsSystemPath(dst_c)) return Status::InvalidArgument("refusing to write into " + to);
  if (dst_c == src_c || dst_c.starts_with(src_c + "/")) {
    return Status::InvalidArgument(to + " lies inside the fixture " + from);
  }
  return CopyTree(src, dst);
}

Result<std::unique_ptr<Simulator>> Simulator::Open(const std::string& root,
                                                   const Options& options) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Status::InvalidArgument(root + " is not a directory");
  const std::string canonical = fs::canonical(root, ec).string();
  if (ec || IsSystemPath(canonical)) {
    return Status::InvalidArgument("refusing to simulate on " + root + ": not a scratch tree");
  }
  if (!(options.period_s > 0) || !std::isfinite(options.period_s)) {
    return Status::InvalidArgument("period_s must be positive");
  }
  auto impl = std::make_unique<Impl>(canonical);
  impl->tree.options = options;
  impl->tree.model.board = options.board;
  impl->tree.model.seed = options.seed;
  impl->tree.model.period_s = options.period_s;
  impl->Discover();
  return std::unique_ptr<Simulator>(new Simulator(std::move(impl)));
}

void Simulator::Step(double t_s) {
  impl_->Step(t_s);
}

const Model& Simulator::model() const {
  return impl_->tree.model;
}

double Simulator::RailPowerMw(std::string_view rail, double t_s) const {
  return impl_->tree.model.RailPowerMw(rail, t_s);
}

double Simulator::RailEnergyMj(std::string_view rail, double t0_s, double t1_s) const {
  return impl_->tree.model.RailEnergyMj(rail, t0_s, t1_s);
}

const std::string& Simulator::root() const {
  return impl_->tree.fs.root();
}

std::string Simulator::SidecarPath() const {
  return impl_->tree.fs.root() + "/" + std::string(kSidecarName);
}

Status Simulator::WriteSidecar(int64_t start_realtime_ns, int64_t start_boottime_ns,
                               double rate_hz) const {
  const std::string path = SidecarPath();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << impl_->tree.model.ToJson(start_realtime_ns, start_boottime_ns, rate_hz);
    out.flush();
    if (!out) return Status::Unavailable("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::Unavailable("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status Simulator::Run(const RunOptions& options, const volatile std::sig_atomic_t* stop,
                      RunStats* stats) {
  RunStats ignored;
  if (stats == nullptr) stats = &ignored;
  if (!(options.rate_hz > 0) || options.rate_hz > 10000) {
    return Status::InvalidArgument("rate_hz must be in (0, 10000]");
  }
  const int64_t period_ns = std::max<int64_t>(1, Round(1e9 / options.rate_hz));
  // The start: CLOCK_REALTIME bracketed by two CLOCK_BOOTTIME reads.
  const int64_t b0 = NowNs(CLOCK_BOOTTIME);
  const int64_t start_real = NowNs(CLOCK_REALTIME);
  const int64_t b1 = NowNs(CLOCK_BOOTTIME);
  const int64_t start_boot = b0 + (b1 - b0) / 2;
  const int64_t start_mono = NowNs(CLOCK_MONOTONIC);

  for (int64_t k = 0;;) {
    if (stop != nullptr && *stop) break;
    const double t = static_cast<double>(NowNs(CLOCK_BOOTTIME) - start_boot) / 1e9;
    if (options.duration_s > 0 && t >= options.duration_s) break;
    impl_->Step(t);
    ++stats->ticks;
    if (stats->ticks == 1) {
      if (Status written = WriteSidecar(start_real, start_boot, options.rate_hz); !written.ok()) {
        return written;
      }
      if (options.on_ready) options.on_ready();
    }
    // The next absolute deadline; skip the missed ones after an overrun.
    ++k;
    int64_t deadline = start_mono + k * period_ns;
    const int64_t now = NowNs(CLOCK_MONOTONIC);
    if (now >= deadline) {
      ++stats->overruns;
      k = (now - start_mono) / period_ns + 1;
      deadline = start_mono + k * period_ns;
    }
    timespec ts{static_cast<time_t>(deadline / 1'000'000'000),
                static_cast<long>(deadline % 1'000'000'000)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      if (stop != nullptr && *stop) break;
    }
  }
  return Status::Ok();
}

size_t Simulator::open_files() const {
  return impl_->tree.writer.size();
}

uint64_t Simulator::write_errors() const {
  return impl_->tree.writer.errors();
}

}  // namespace edgemon::sim
