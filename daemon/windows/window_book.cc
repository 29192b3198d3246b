#include "daemon/windows/window_book.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "edgemon/checked.h"

namespace edgemon::windows {
namespace {

// Seconds from `earlier` to `later`, for a message.
std::string SecondsBetween(int64_t earlier, int64_t later) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", DurationS(earlier, later));
  return buf;
}

std::string Id(int64_t id) {
  return "window " + std::to_string(id);
}

}  // namespace

WindowBook::WindowBook(store::RingStore& store, Clock& clock, std::function<int64_t()> now,
                       std::function<void()> on_first_lease)
    : store_(store),
      clock_(clock),
      now_(std::move(now)),
      on_first_lease_(std::move(on_first_lease)) {
  max_open_ = std::min(kMaxOpen, store_.max_windows());
  max_per_principal_ = std::max<size_t>(1, max_open_ / 4);
  const int64_t mono = clock_.MonotonicNs(), t = now_();
  if (auto open = store_.OpenWindows(); open.ok()) {
    for (const auto& w : *open) {
      // A leased window's holder gets a lease from now; an unleased one ages
      // from its start (kUnleasedMaxAgeNs counts across restarts).
      open_[w.id] = Open{w.lease_ns, w.lease_ns ? mono + *w.lease_ns : 0,
                         w.lease_ns ? std::max(t, w.start_ns) : w.start_ns, w.owner, std::nullopt};
    }
  }
  CountLeased();
}

Result<store::Window> WindowBook::Begin(const std::string& label, const Stamp& start,
                                        std::optional<int64_t> lease_ns,
                                        const runtime::Principal& who) {
  Sweep();
  if (Status room = MakeRoom(who); !room.ok()) return room;
  auto id = store_.BeginWindow(label, start.timeline_ns, lease_ns, who.key);
  if (!id.ok()) return StoreFailure(store_, "begin window: " + id.status().message());
  open_[*id] = Open{lease_ns, lease_ns ? clock_.MonotonicNs() + *lease_ns : 0, start.timeline_ns,
                    who.key, start.boottime_ns};
  if (lease_ns) CountLeased();
  return store::Window{*id, label, start.timeline_ns, std::nullopt, false, lease_ns, who.key, {}};
}

Result<store::Window> WindowBook::Renew(int64_t id, int64_t arrived,
                                        const runtime::Principal& who) {
  Sweep();
  auto it = open_.find(id);
  if (it == open_.end()) {
    return Status::NotFound(Id(id) + " is not open (ended, abandoned or unknown)");
  }
  if (!runtime::Principal::MayActOn(who, it->second.owner)) {
    return Status::PermissionDenied(Id(id) + " belongs to another user");
  }
  if (!it->second.lease_ns) return Status::FailedPrecondition(Id(id) + " has no lease to renew");
  it->second.expires_mono_ns = clock_.MonotonicNs() + *it->second.lease_ns;
  it->second.last_seen_ns = std::max(it->second.last_seen_ns, arrived);
  auto w = store_.GetWindow(id);
  if (!w.ok()) return StoreFailure(store_, "renew window: " + w.status().message());
  if (!*w) return Status::NotFound("no window with id " + std::to_string(id));
  return **w;
}

Result<store::Window> WindowBook::End(
    int64_t id, int64_t arrived, std::optional<Stamp> end_stamp, std::optional<Stamp> start_stamp,
    const runtime::Principal& who,
    const std::function<WindowResult(int64_t start, int64_t end)>& result) {
  Sweep();
  auto w = store_.GetWindow(id);
  if (!w.ok()) return StoreFailure(store_, "end window: " + w.status().message());
  if (!*w) return Status::NotFound("no window with id " + std::to_string(id));
  if (!runtime::Principal::MayActOn(who, (*w)->owner)) {
    return Status::PermissionDenied(Id(id) + " belongs to another user");
  }
  if ((*w)->abandoned) {
    return Status::FailedPrecondition(
        Id(id) + " was closed as abandoned: its lease ran out without a renewal");
  }
  if ((*w)->end_ns) return Status::FailedPrecondition(Id(id) + " has already ended");
  // Stamps read in order on CLOCK_BOOTTIME stay in order on the timeline
  // (Stamp): one read at or after the begin is not before the recorded
  // start, and a start read at or before the end is not after it.
  if (const auto it = open_.find(id); it != open_.end() && it->second.start_boottime_ns) {
    const int64_t began = *it->second.start_boottime_ns;
    for (std::optional<Stamp>* s : {&start_stamp, &end_stamp}) {
      if (*s && (*s)->boottime_ns && *(*s)->boottime_ns >= began &&
          (*s)->timeline_ns < (*w)->start_ns) {
        (*s)->timeline_ns = (*w)->start_ns;
      }
    }
  }
  if (start_stamp && end_stamp && start_stamp->boottime_ns && end_stamp->boottime_ns &&
      *start_stamp->boottime_ns <= *end_stamp->boottime_ns &&
      start_stamp->timeline_ns > end_stamp->timeline_ns) {
    start_stamp->timeline_ns = end_stamp->timeline_ns;
  }
  std::optional<int64_t> end_stamped, start_stamped;
  if (end_stamp) end_stamped = end_stamp->timeline_ns;
  if (start_stamp) start_stamped = start_stamp->timeline_ns;
  if (end_stamped && *end_stamped < (*w)->start_ns) {
    return Status::InvalidArgument("caller_boottime_ns: the end is " +
                                   SecondsBetween(*end_stamped, (*w)->start_ns) + " s before " +
                                   Id(id) + "'s start");
  }
  if (start_stamped && *start_stamped < (*w)->start_ns) {
    return Status::InvalidArgument(
        "caller_start_boottime_ns: the work's start is " +
        SecondsBetween(*start_stamped, (*w)->start_ns) + " s before " + Id(id) +
        "'s recorded start (its BeginWindow): a start is stamped on the daemon's machine after "
        "BeginWindow returned");
  }
  if (end_stamped && start_stamped && *start_stamped > *end_stamped) {
    return Status::InvalidArgument("caller_start_boottime_ns: the work's start is " +
                                   SecondsBetween(*end_stamped, *start_stamped) + " s after " +
                                   Id(id) + "'s end (caller_boottime_ns)");
  }
  const int64_t start = start_stamped.value_or((*w)->start_ns);
  const int64_t end = end_stamped ? *end_stamped : std::max(arrived, start);
  const WindowResult run = result ? result(start, end) : WindowResult{};
  if (auto s = start_stamped ? store_.EndWindowFrom(id, start, end, run)
                             : store_.EndWindow(id, end, false, run);
      !s.ok()) {
    return StoreFailure(store_, "end window: " + s.message());
  }
  open_.erase(id);
  CountLeased();
  store::Window done = **w;
  done.start_ns = start;
  done.end_ns = end;
  done.result = run;
  return done;
}

void WindowBook::Sweep() {
  const int64_t mono = clock_.MonotonicNs();
  const int64_t stale = SubSaturating(now_(), kUnleasedMaxAgeNs);
  for (auto it = open_.begin(); it != open_.end();) {
    const Open& o = it->second;
    // A lease not renewed in time, or an unleased window older than
    // kUnleasedMaxAgeNs (a mark begun and never ended).
    const bool expired = o.lease_ns ? mono >= o.expires_mono_ns : o.last_seen_ns < stale;
    auto next = std::next(it);
    if (expired) (void)CloseAbandoned(it, "sweep");  // a failure leaves it open: retried
    it = next;
  }
  CountLeased();
}

Status WindowBook::MakeRoom(const runtime::Principal& who) {
  std::map<std::string, size_t> held;
  for (const auto& [id, o] : open_) ++held[o.owner];
  const runtime::Room room = runtime::RoomFor(who, held, max_open_, max_per_principal_);
  if (room.verdict == runtime::Room::Verdict::kAdd) return Status::Ok();
  if (room.verdict == runtime::Room::Verdict::kTakeFrom) {
    // The biggest holder's oldest window (ids grow with time) is closed.
    for (auto it = open_.begin(); it != open_.end(); ++it) {
      if (it->second.owner == room.victim) return CloseAbandoned(it, "begin window");
    }
    return Status::Ok();
  }
  // `who` is at its quota, or is the biggest holder of a full table: its own
  // oldest unleased window (one a script began and never ended: a leased one
  // is renewed by a run still going) is closed, so that a leaked mark never
  // locks its holder out.
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second.owner == who.key && !it->second.lease_ns) {
      return CloseAbandoned(it, "begin window");
    }
  }
  if (room.verdict == runtime::Room::Verdict::kOverQuota) {
    return Status::ResourceExhausted("you have " + std::to_string(room.held) +
                                     " open windows, each with a live lease (at most " +
                                     std::to_string(max_per_principal_) + " per user); end some");
  }
  return Status::ResourceExhausted("too many open windows (limit " + std::to_string(max_open_) +
                                   "), each of yours with a live lease; end some");
}

Status WindowBook::CloseAbandoned(Iter it, std::string_view what) {
  auto w = store_.GetWindow(it->first);
  if (!w.ok()) return StoreFailure(store_, std::string(what) + ": " + w.status().message());
  if (*w && !(*w)->end_ns) {
    // Its holder was last heard from at its start or last renewal.
    if (auto e =
            store_.EndWindow(it->first, std::max(it->second.last_seen_ns, (*w)->start_ns), true);
        !e.ok()) {
      return StoreFailure(store_, std::string(what) + ": " + e.message());
    }
  }
  open_.erase(it);
  return Status::Ok();
}

void WindowBook::CountLeased() {
  size_t n = 0;
  for (const auto& [id, o] : open_) n += o.lease_ns.has_value();
  if (leased_.exchange(n) == 0 && n > 0 && on_first_lease_) on_first_lease_();
}

}  // namespace edgemon::windows
