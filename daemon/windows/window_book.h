// WindowBook: the open windows' lifecycle, out of the transport. A window
// (edgemon record, measure(), a mark) is begun, renewed while its lease
// lasts, and ended by its owner, or closed as abandoned: when its lease ran
// out without a renewal, when it was begun without a lease and is still open
// kUnleasedMaxAgeNs after its start (a mark begun and never ended), or to
// make room (below). The book holds the open ones in memory beside the store
// and applies the quotas:
//   - at most max_open() windows are open at once (kMaxOpen, fewer when the
//     store's windows table is smaller), and one principal holds at most a
//     quarter of them (principal.h; root is never over its quota);
//   - a principal at its quota loses its own oldest unleased window (closed
//     as abandoned), so a leaked mark never locks its holder out;
//     RESOURCE_EXHAUSTED goes only to a principal whose windows all hold
//     live leases;
//   - when the table is full, its biggest holder loses its oldest window so
//     that a newcomer is served.
// The open windows are loaded from the store at construction: a leased one
// gets one lease from then to be renewed, an unleased one ages from its
// start (the age counts across restarts).
//
// Thread safety: Begin, Renew, End and Sweep from one thread at a time (the
// API service's window worker); leased() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/runtime/principal.h"
#include "daemon/store/ring_store.h"
#include "edgemon/clock.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::windows {

// A caller's stamp of a window's edge: where it lies on the frames'
// timeline, and the CLOCK_BOOTTIME it was read at, when known. Each stamp
// is put on the timeline by itself (Sampler::TimelineAtBoottime: one before
// the newest frame at that frame's offset to the wall clock, one after it at
// the offset read then), and two conversions differ by the reads' own gaps
// or a slewing clock; the raw readings keep stamps a moment apart in the
// order they were read.
struct Stamp {
  int64_t timeline_ns = 0;
  std::optional<int64_t> boottime_ns;
};

class WindowBook {
 public:
  // The most windows open at once (fewer when the store's table is smaller).
  static constexpr size_t kMaxOpen = 1024;
  // An unleased window still open this long after its start is closed as
  // abandoned: a week, the default raw retention.
  static constexpr int64_t kUnleasedMaxAgeNs = int64_t{7} * 86'400 * 1'000'000'000;

  // `now`: the frames' timeline (Sampler::TimelineNs), what windows are
  // stamped on. `on_first_lease`: called (on the caller's thread) when the
  // count of leased windows rises from 0, so that a lease timer can wake.
  WindowBook(store::RingStore& store, Clock& clock, std::function<int64_t()> now,
             std::function<void()> on_first_lease = {});

  // Opens a window labelled `label` from `start` (on the timeline; its
  // CLOCK_BOOTTIME too, when known: the caller's stamp, or the daemon's
  // reading as the call arrived) for `who`, with a lease of lease_ns if
  // given, after the sweep and after making room (above).
  Result<store::Window> Begin(const std::string& label, const Stamp& start,
                              std::optional<int64_t> lease_ns, const runtime::Principal& who);
  // Renews `id`'s lease for `who`, who was heard from at `arrived`:
  // NOT_FOUND when it is not open, PERMISSION_DENIED when it is another's,
  // FAILED_PRECONDITION when it has no lease.
  Result<store::Window> Renew(int64_t id, int64_t arrived, const runtime::Principal& who);
  // Ends `id` for `who`: at `end_stamp` (a caller's stamp) or else at
  // `arrived`, from `start_stamp` (the work's start, a caller's stamp) or
  // else its recorded start; `result(start, end)` gives what the run
  // produced, stored with it. Stamps read in order on CLOCK_BOOTTIME (the
  // window's begin, the work's start, its end) stay in that order on the
  // timeline: a later one placed a hair before an earlier one is moved up
  // to it. NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION (abandoned,
  // already ended), INVALID_ARGUMENT naming the field of an edge before the
  // start or a start after the end. Returns the ended window.
  Result<store::Window> End(int64_t id, int64_t arrived, std::optional<Stamp> end_stamp,
                            std::optional<Stamp> start_stamp, const runtime::Principal& who,
                            const std::function<WindowResult(int64_t start, int64_t end)>& result);
  // Closes as abandoned the windows whose lease ran out and the unleased
  // ones older than kUnleasedMaxAgeNs; a store failure leaves one open, to
  // be tried again at the next sweep.
  void Sweep();

  // Open windows holding a lease (any thread): a lease timer sweeps only
  // while some do.
  size_t leased() const { return leased_.load(); }
  size_t max_open() const { return max_open_; }
  size_t max_per_principal() const { return max_per_principal_; }
  size_t open() const { return open_.size(); }

 private:
  struct Open {
    std::optional<int64_t> lease_ns;
    int64_t expires_mono_ns = 0;  // lease only
    int64_t last_seen_ns = 0;     // timeline time of the start or the last renewal
    std::string owner;            // Principal key
    // The start's CLOCK_BOOTTIME, for windows begun since this daemon started
    // (one loaded from the store may be from an earlier boot).
    std::optional<int64_t> start_boottime_ns;
  };
  using Iter = std::map<int64_t, Open>::iterator;

  // Room for one more open window of `who` (see the header comment).
  Status MakeRoom(const runtime::Principal& who);
  // Ends `it`'s window as abandoned at its holder's last sign of life and
  // forgets it; a store failure leaves it open.
  Status CloseAbandoned(Iter it, std::string_view what);
  void CountLeased();
  Status StoreError(const std::string& what) const;

  store::RingStore& store_;
  Clock& clock_;
  const std::function<int64_t()> now_;
  const std::function<void()> on_first_lease_;
  size_t max_open_ = 0;
  size_t max_per_principal_ = 0;
  std::map<int64_t, Open> open_;  // by id (ids grow with time: the first is the oldest)
  std::atomic<size_t> leased_{0};
};

}  // namespace edgemon::windows
