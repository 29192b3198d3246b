#include "daemon/control/control_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "daemon/collect/sysfs.h"
#include "daemon/runtime/thread_name.h"
#include "edgemon/text.h"
#include "proto/grpc_status.h"

namespace edgemon::control {
using nlohmann::json;

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewLeaseId() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// Untrusted text for the log (a fan name, a comm, a message quoting one):
// escaped, so that it can neither move the cursor of a terminal showing the
// log nor start a line of its own, and cut after `max` bytes.
std::string LogSafe(std::string_view text, size_t max = 256) {
  std::string out = TerminalSafe(text.substr(0, max));
  for (size_t i = 0; (i = out.find('\n', i)) != std::string::npos; i += 2) out.replace(i, 1, "\\n");
  if (text.size() > max) out += "…(" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string Describe(const v1::Lease& l) {
  std::string s = "lease " + l.id() + " (" + l.detail() + ", uid " + std::to_string(l.uid()) +
                  " pid " + std::to_string(l.pid());
  if (l.expires_realtime_ns() > 0) {
    const int64_t left = (l.expires_realtime_ns() - NowNs()) / 1'000'000'000;
    s += ", " + std::to_string(std::max<int64_t>(left, 0)) + " s left";
  } else {
    s += l.detached() ? ", until released" : ", while its client stays connected";
  }
  return s + ")";
}

// hwmon names are a few bytes ("pwmfan"); a longer one names no fan.
constexpr size_t kMaxFanName = 255;

const char* KindNoun(const std::string& kind) {
  if (kind == "mode") return "the power mode";
  if (kind == "clocks") return "the clocks";
  return "the fan";
}

std::string HeldBy(const std::string& kind) {
  return std::string(KindNoun(kind)) + (kind == "clocks" ? " are held by " : " is held by ");
}

}  // namespace

ControlService::ControlService(BoardControl& board, std::string state_path,
                               const CallerTable& callers, std::shared_ptr<spdlog::logger> log)
    : board_(board),
      state_path_(std::move(state_path)),
      state_dir_(std::string(DirName(state_path_))),
      callers_(callers),
      log_(std::move(log)) {
  expiry_ = std::thread([this] { ExpiryLoop(); });
  runtime::NameThread(expiry_, "control-expiry");
}

ControlService::~ControlService() {
  Shutdown();
}

void ControlService::Shutdown() {
  {
    std::lock_guard lk(mu_);
    while (!leases_.empty()) {
      // Newest first: a clocks lock is undone before the mode under it.
      auto newest = leases_.begin();
      for (auto it = leases_.begin(); it != leases_.end(); ++it) {
        if (it->second.seq > newest->second.seq) newest = it;
      }
      EndLocked(newest->first, "the helper is stopping");
    }
    stopping_ = true;
  }
  cv_.notify_all();
  if (expiry_.joinable()) expiry_.join();
}

void ControlService::RecoverFromState() {
  auto text = state_dir_.ReadText(BaseName(state_path_), ConfinedRoot::kMaxRead,
                                  ConfinedRoot::Last::kNoFollow);
  if (!text.ok()) {
    if (text.status().code() != StatusCode::kNotFound) {
      log_->error("state file unreadable ({}); nothing restored from it", text.status().message());
    }
    return;
  }
  json state = json::parse(*text, nullptr, false);
  if (state.is_discarded() || !state.contains("leases") || !state["leases"].is_array()) {
    log_->error("state file {} is unreadable; nothing restored from it", state_path_);
    return;
  }
  // The count of changes goes on from the predecessor's (a counter since boot).
  if (state.contains("changes") && state["changes"].is_number_unsigned()) {
    changes_ = state["changes"].get<uint64_t>();
  }
  std::vector<json> leases(state["leases"].begin(), state["leases"].end());
  auto seq = [](const json& l) {
    return l.is_object() && l.contains("seq") && l["seq"].is_number_unsigned()
               ? l["seq"].get<uint64_t>()
               : 0;
  };
  std::sort(leases.begin(), leases.end(),
            [&](const json& a, const json& b) { return seq(a) > seq(b); });
  std::lock_guard lk(mu_);
  for (const auto& l : leases) {
    try {
      Status left = l.contains("plan") ? board_.Restore(l["plan"])
                                       : Status::FailedPrecondition("no plan saved");
      log_->warn(
          "restored lease {} ({}) of uid {} pid {} left by a previous run that did not end it{}",
          LogSafe(l.value("id", "?")), LogSafe(l.value("detail", "?")), l.value("uid", 0U),
          l.value("pid", 0U), left.ok() ? "" : ": " + left.message());
    } catch (const json::exception& e) {
      log_->error("state file {}: a lease entry is malformed ({}); not restored: {}", state_path_,
                  e.what(), LogSafe(l.dump(), 1024));
    }
  }
  if (Status saved = SaveStateLocked(); !saved.ok()) log_->error("{}", saved.message());
}

Status ControlService::SaveStateLocked() {
  json leases = json::array();
  for (const auto& [kind, rec] : leases_) {
    leases.push_back({{"kind", kind},
                      {"id", rec.info.id()},
                      {"detail", rec.info.detail()},
                      {"uid", rec.info.uid()},
                      {"pid", rec.info.pid()},
                      {"gid", rec.info.gid()},
                      {"seq", rec.seq},
                      {"plan", rec.plan}});
  }
  const std::string text = json{{"format", "edgemon-control-state"},
                                {"version", 1},
                                {"changes", changes_.load()},
                                {"leases", leases}}
                               .dump(1) +
                           "\n";
  std::error_code ec;
  std::filesystem::create_directories(state_dir_.root(), ec);
  // A fresh .tmp (never written through a planted link), renamed in place.
  return state_dir_.ReplaceFile(BaseName(state_path_), text, 0600);
}

Status ControlService::Who(grpc::ServerContext* ctx, Caller* who) const {
  const std::string peer = ctx->peer();
  const std::optional<Caller> c = callers_.Of(peer);
  if (!c) return Status::PermissionDenied("unknown caller " + peer);
  if (!c->allowed) {
    log_->warn("refused uid {} pid {} ({}): {}", c->uid, c->pid, LogSafe(c->comm), c->refusal);
    return Status::PermissionDenied(c->refusal);
  }
  *who = *c;
  return Status::Ok();
}

Status ControlService::Grant(const Caller& who, const std::string& kind, const std::string& detail,
                             const v1::LeaseOptions& options,
                             const std::function<Status(const std::string&, json*)>& plan,
                             v1::Lease* granted) {
  if (!(options.duration_s() >= 0) || options.duration_s() > 30 * 86400.0) {
    return Status::InvalidArgument("lease duration must be 0..30 days");
  }
  if (options.detach() && options.duration_s() <= 0) {
    return Status::InvalidArgument(
        "a detached lease needs a duration (it would otherwise never end by itself)");
  }
  std::lock_guard lk(mu_);
  auto refuse = [&](const Status& why) {
    log_->warn("refused {} to uid {} pid {} ({}): {}", LogSafe(detail), who.uid, who.pid,
               LogSafe(who.comm), LogSafe(why.message(), 1024));
    return why;
  };
  if (stopping_) return refuse(Status::Unavailable("the helper is stopping"));
  if (auto it = leases_.find(kind); it != leases_.end()) {
    return refuse(Status::FailedPrecondition(HeldBy(kind) + Describe(it->second.info)));
  }
  if (kind == "mode") {
    if (auto it = leases_.find("clocks"); it != leases_.end()) {
      return refuse(Status::FailedPrecondition("the clocks are locked by " +
                                               Describe(it->second.info) +
                                               "; set the mode before locking the clocks"));
    }
  }
  LeaseRec rec;
  const std::string id = NewLeaseId();
  if (Status o = plan(id, &rec.plan); !o.ok()) return refuse(o);
  rec.seq = next_seq_++;
  rec.info.set_id(id);
  rec.info.set_kind(kind);
  rec.info.set_detail(detail);
  rec.info.set_uid(who.uid);
  rec.info.set_pid(static_cast<uint32_t>(who.pid));
  rec.info.set_gid(who.gid);
  rec.info.set_start_realtime_ns(NowNs());
  if (options.duration_s() > 0) {
    rec.info.set_expires_realtime_ns(rec.info.start_realtime_ns() +
                                     static_cast<int64_t>(options.duration_s() * 1e9));
  }
  rec.info.set_detached(options.detach());
  rec.watched = !options.detach();
  leases_[kind] = rec;
  if (Status saved = SaveStateLocked(); !saved.ok()) {
    leases_.erase(kind);
    return refuse(Status::Internal(saved.message() + "; nothing was changed"));
  }
  if (Status o = board_.Apply(rec.plan); !o.ok()) {
    leases_.erase(kind);
    if (Status saved = SaveStateLocked(); !saved.ok()) log_->error("{}", saved.message());
    return refuse(o);
  }
  changes_++;
  if (Status saved = SaveStateLocked(); !saved.ok()) log_->error("{}", saved.message());
  log_->info("lease {} granted to uid {} pid {} gid {} ({}): {}, {}", id, who.uid, who.pid, who.gid,
             LogSafe(who.comm), LogSafe(detail),
             options.duration_s() > 0 ? "for " + std::to_string(options.duration_s()) + " s"
                                      : std::string("while its client stays connected"));
  *granted = rec.info;
  return Status::Ok();
}

const ControlService::LeaseRec* ControlService::NewerOfOthersLocked(const LeaseRec& rec) const {
  const LeaseRec* newest = nullptr;
  for (const auto& [kind, other] : leases_) {
    if (other.seq > rec.seq && other.info.uid() != rec.info.uid() &&
        (newest == nullptr || other.seq > newest->seq)) {
      newest = &other;
    }
  }
  return newest;
}

std::string ControlService::EndLeaseLocked(const std::string& kind, const std::string& why,
                                           bool as_root) {
  auto it = leases_.find(kind);
  if (it == leases_.end()) return {};
  std::string message;
  const LeaseRec* newer = NewerOfOthersLocked(it->second);
  if (newer != nullptr && !as_root) {
    // Ending it now would end another uid's lease (newest first): it ends
    // when the newer leases of others have.
    it->second.ending = why;
    message = "lease " + it->second.info.id() + " (" + it->second.info.detail() + "): " + why +
              "; it ends (restoring) when " + Describe(newer->info) +
              " has ended, as changes are restored newest first";
    log_->info("{}", LogSafe(message, 1024));
  } else {
    message = EndLocked(kind, why);
  }
  // The leases waiting on newer ones of others that have all ended now.
  for (bool again = true; again;) {
    again = false;
    for (auto& [k, rec] : leases_) {
      if (!rec.ending.empty() && NewerOfOthersLocked(rec) == nullptr) {
        EndLocked(k, rec.ending + " (once the newer leases had ended)");
        again = true;
        break;
      }
    }
  }
  return message;
}

std::string ControlService::EndLocked(const std::string& kind, const std::string& why) {
  auto it = leases_.find(kind);
  if (it == leases_.end()) return {};
  // Restores are exact only newest first (a later lease saved what this one
  // set): the leases granted after this one end before it.
  for (;;) {
    auto newer = leases_.end();
    for (auto i = leases_.begin(); i != leases_.end(); ++i) {
      if (i->second.seq > it->second.seq &&
          (newer == leases_.end() || i->second.seq > newer->second.seq)) {
        newer = i;
      }
    }
    if (newer == leases_.end()) break;
    EndLocked(newer->first, "lease " + it->second.info.id() + ", granted before it, ended");
    it = leases_.find(kind);
  }
  LeaseRec rec = it->second;
  Status left = board_.Restore(rec.plan);
  leases_.erase(it);
  if (Status saved = SaveStateLocked(); !saved.ok()) log_->error("{}", saved.message());
  std::string message = "lease " + rec.info.id() + " (" + rec.info.detail() + ") ended: " + why +
                        "; " + (left.ok() ? "restored" : left.message());
  if (left.ok()) {
    log_->info("{} (uid {} pid {})", LogSafe(message, 1024), rec.info.uid(), rec.info.pid());
  } else {
    log_->error("{} (uid {} pid {})", LogSafe(message, 1024), rec.info.uid(), rec.info.pid());
  }
  if (rec.watched) ended_[rec.info.id()] = message;  // for its Hold()
  cv_.notify_all();
  return message;
}

Status ControlService::Hold(grpc::ServerContext* ctx, grpc::ServerWriter<v1::LeaseEvent>* writer,
                            const v1::Lease& lease) {
  v1::LeaseEvent ev;
  ev.set_kind(v1::LeaseEvent::GRANTED);
  *ev.mutable_lease() = lease;
  ev.set_message("granted " + Describe(lease));
  const bool sent = writer->Write(ev);
  if (lease.detached() && sent) return Status::Ok();
  std::string message;
  {
    std::unique_lock lk(mu_);
    for (;;) {
      auto it = leases_.find(lease.kind());
      if (it == leases_.end() || it->second.info.id() != lease.id()) {
        message = ended_[lease.id()];
        break;
      }
      if (!sent || ctx->IsCancelled()) {
        message = EndLeaseLocked(lease.kind(), "its client went away", false);
        // Ended, or to end after newer leases of others: nobody waits for it now.
        if (auto left = leases_.find(lease.kind()); left != leases_.end())
          left->second.watched = false;
        break;
      }
      cv_.wait_for(lk, std::chrono::milliseconds(100));
    }
    ended_.erase(lease.id());
  }
  ev.set_kind(v1::LeaseEvent::ENDED);
  ev.set_message(message);
  writer->Write(ev);
  return Status::Ok();
}

void ControlService::ExpiryLoop() {
  std::unique_lock lk(mu_);
  while (!stopping_) {
    const int64_t now = NowNs();
    std::vector<std::string> due;
    for (const auto& [kind, rec] : leases_) {
      if (rec.ending.empty() && rec.info.expires_realtime_ns() > 0 &&
          now >= rec.info.expires_realtime_ns()) {
        due.push_back(kind);
      }
    }
    for (const auto& kind : due) {
      auto it = leases_.find(kind);
      if (it == leases_.end() || !it->second.ending.empty()) continue;  // ended with an older one
      EndLeaseLocked(kind, "its duration passed", false);
    }
    cv_.wait_for(lk, std::chrono::milliseconds(200));
  }
}

grpc::Status ControlService::ListModes(grpc::ServerContext* ctx, const v1::ListModesRequest*,
                                       v1::ListModesResponse* out) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  std::lock_guard lk(mu_);
  auto def = board_.DefaultMode();
  for (const auto& m : board_.Modes()) {
    auto* pm = out->add_modes();
    pm->set_id(m.id);
    pm->set_name(m.name);
    pm->set_is_default(def == m.id);
  }
  if (auto cur = board_.CurrentMode()) out->set_current_id(*cur);
  out->set_nvpmodel_tool(!board_.NvpmodelTool().empty());
  return grpc::Status::OK;
}

grpc::Status ControlService::GetState(grpc::ServerContext* ctx, const v1::GetStateRequest*,
                                      v1::ControlState* out) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  std::lock_guard lk(mu_);
  for (const auto& [kind, rec] : leases_) *out->add_leases() = rec.info;
  if (auto cur = board_.CurrentMode()) {
    out->set_mode_id(*cur);
    for (const auto& m : board_.Modes()) {
      if (m.id == *cur) out->set_mode_name(m.name);
    }
  }
  out->set_clocks_locked(leases_.count("clocks") > 0 || board_.ClocksLocked());
  for (const auto& f : board_.Fans()) {
    auto* fan = out->add_fans();
    fan->set_name(f.name);
    if (f.pwm) fan->set_pwm(static_cast<uint32_t>(*f.pwm));
  }
  out->set_changes(changes_.load());
  return grpc::Status::OK;
}

grpc::Status ControlService::SetMode(grpc::ServerContext* ctx, const v1::SetModeRequest* req,
                                     grpc::ServerWriter<v1::LeaseEvent>* writer) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  std::string name;
  for (const auto& m : board_.Modes()) {
    if (m.id == req->id()) name = " (" + m.name + ")";
  }
  v1::Lease lease;
  Status s = Grant(
      who, "mode", "power mode " + std::to_string(req->id()) + name, req->lease(),
      [&](const std::string&, json* plan) { return board_.PlanMode(req->id(), plan); }, &lease);
  return wire::ToGrpc(s.ok() ? Hold(ctx, writer, lease) : s);
}

grpc::Status ControlService::LockClocks(grpc::ServerContext* ctx, const v1::LockClocksRequest* req,
                                        grpc::ServerWriter<v1::LeaseEvent>* writer) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  v1::Lease lease;
  const std::string how =
      board_.JetsonClocksTool().empty() ? "cpufreq/devfreq at maximum" : "jetson_clocks";
  Status s = Grant(
      who, "clocks", "clocks locked (" + how + ")", req->lease(),
      [&](const std::string& id, json* plan) { return board_.PlanClocks(id, plan); }, &lease);
  return wire::ToGrpc(s.ok() ? Hold(ctx, writer, lease) : s);
}

grpc::Status ControlService::SetFan(grpc::ServerContext* ctx, const v1::SetFanRequest* req,
                                    grpc::ServerWriter<v1::LeaseEvent>* writer) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  if (!req->has_speed_percent()) {
    return wire::ToGrpc(Status::InvalidArgument("give the fan speed in percent (0..100)"));
  }
  if (req->fan().size() > kMaxFanName) {
    const std::string why = "a fan name of " + std::to_string(req->fan().size()) +
                            " bytes is no fan (names are at most " + std::to_string(kMaxFanName) +
                            " bytes)";
    log_->warn("refused fan {} to uid {} pid {} ({}): {}", LogSafe(req->fan()), who.uid, who.pid,
               LogSafe(who.comm), why);
    return wire::ToGrpc(Status::InvalidArgument(why));
  }
  v1::Lease lease;
  const int pct = static_cast<int>(std::min<uint32_t>(req->speed_percent(), 1000));
  Status s = Grant(
      who, "fan",
      "fan " + (req->fan().empty() ? std::string("all") : req->fan()) + " at " +
          std::to_string(pct) + "%",
      req->lease(),
      [&](const std::string&, json* plan) { return board_.PlanFan(req->fan(), pct, plan); },
      &lease);
  return wire::ToGrpc(s.ok() ? Hold(ctx, writer, lease) : s);
}

grpc::Status ControlService::Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req,
                                     v1::ReleaseResponse* out) {
  Caller who;
  if (Status s = Who(ctx, &who); !s.ok()) return wire::ToGrpc(s);
  if (req->lease_id().empty() && req->kind() != "mode" && req->kind() != "clocks" &&
      req->kind() != "fan") {
    return wire::ToGrpc(
        Status::InvalidArgument("give a lease id or a kind (mode, clocks or fan) to release"));
  }
  std::lock_guard lk(mu_);
  auto it = leases_.end();
  for (auto i = leases_.begin(); i != leases_.end(); ++i) {
    if ((!req->lease_id().empty() && i->second.info.id() == req->lease_id()) ||
        (req->lease_id().empty() && i->first == req->kind())) {
      it = i;
    }
  }
  if (it == leases_.end()) {
    return wire::ToGrpc(Status::NotFound(
        req->lease_id().empty() ? "no lease holds " + std::string(KindNoun(req->kind()))
                                : "no lease " + LogSafe(req->lease_id(), 64)));
  }
  if (who.uid != 0 && who.uid != it->second.info.uid()) {
    log_->warn("refused release of {} to uid {} pid {}", it->second.info.id(), who.uid, who.pid);
    return wire::ToGrpc(
        Status::PermissionDenied("only its holder (uid " + std::to_string(it->second.info.uid()) +
                                 ") or root may release " + Describe(it->second.info)));
  }
  *out->mutable_lease() = it->second.info;
  out->set_message(EndLeaseLocked(
      it->first, "released by uid " + std::to_string(who.uid) + " pid " + std::to_string(who.pid),
      who.uid == 0));
  return grpc::Status::OK;
}

}  // namespace edgemon::control
