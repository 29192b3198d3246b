// RingStore: edgemon's history, a SQLite ring of frames with a downsampled
// tier, energy counters that can be read back at any instant, and named
// windows (markers around benchmark runs).
//
// DESIGN NOTE
// ===========
//
// Files. One SQLite database in WAL mode (`<path>`, `<path>-wal`,
// `<path>-shm`), synchronous=NORMAL (Debian's build defaults to FULL), page
// size 4096, auto_vacuum=NONE (INCREMENTAL in stores made before it),
// application_id 'EDGM', schema version
// in PRAGMA user_version (see kSchemaVersion and the migrations in
// schema.cc). Tables:
//
//   meta(key, value)                 what the writer keeps exact: frames,
//                                    rollup_rows, rollup_seq (I7) and
//                                    channels_version (bumped with every
//                                    channels write; readers cache by it)
//   channels(id, key, kind, name,    one row per Channel::Key() ever seen;
//     field, unit, device, parent,   `id` is store-local, dense, never
//     flags, min, max, crit, trips,  reused; descriptions are updated in
//     attrs, first_seen_ns)          place, rows are never deleted
//   frames(seq, boottime_ns,         raw tier: one row per frame; `data` is a
//     realtime_ns, data)             compact blob of (id, value) pairs with
//                                    absent values left out, or of the
//                                    differences from a base (frame_codec.h,
//                                    I17), and since schema 16 the frames of
//                                    a commit compressed into their first
//                                    row, the others referring to it (I18);
//                                    no index on time: a time is found by
//                                    bisecting the seqs (I11)
//   frame_bases(id, data)            (I17) the frames that later frames are
//                                    written against (version 1 blobs)
//   rollup(chunk, channel,           rollup tier: per channel and period
//     periods, first_ns, last_ns,    (default 60 s) min/max/sum/count of the
//     data) WITHOUT ROWID            present values; avg = sum / count;
//                                    chunk = floor(t_ns / 1 h) leads the
//                                    key (I7); one row holds a chunk's
//                                    periods of one channel, packed in
//                                    `data` (PackRollup), `periods` of them
//                                    from first_ns to last_ns
//   rollup_channels(channel,         (I7) the first and last period of each
//     first_ns, last_ns)             channel's rollup rows: may reach past
//                                    them after deletions, never short
//   windows(id, label, start_ns,     named windows; end_ns NULL while open;
//     end_ns, abandoned, lease_ns,   lease_ns NULL when unleased; abandoned 1
//     owner, items, exit_status,     when closed because the lease ran out;
//     input_rail, input_energy_mj)   the rest (WindowResult) set by EndWindow
//   clock_jumps(boottime_ns,         one row per wall-clock step seen (I11)
//     realtime_ns, old_offset_ns,
//     new_offset_ns)
//   boots(first_seq)                 the first seq of each boot segment
//                                    held (I5)
//   spans(level, t_ns, span_ns,      (I15) the frames of each closed rollup
//     frames, first_seq, first_ns,   period (level 0), of each closed block
//     last_seq, last_ns, holes,      of kBlockPeriods periods (level 1, an
//     max_step_ns, bad) WITHOUT      hour by default), of each closed day
//     ROWID                          of kDayBlocks blocks (level 2) and of
//                                    each closed month of kMonthDays days
//                                    (level 3): how many, the
//                                    first and last, the seqs missing between
//                                    them, the largest realtime step between
//                                    two frames with consecutive seqs, and
//                                    how many were folded without their
//                                    values or lost after folding
//   span_stats(level, chunk,         (I15) a block's, day's or month's
//     channel, t_ns, count, min,     min/max/sum/count per channel (a
//     max, sum)                      period's are its rollup rows); keyed
//                                    (level, chunk, channel, t_ns) with
//                                    chunk the day of a block's start
//                                    (SpanChunk), 0 for a day's or month's
//   span_values(level, channel,      (I15) per clock channel (IsClock) and
//     t_ns, value, count)            block, day or month: how many frames
//                                    held each value (frequency
//                                    residency); keyed
//                                    (level, t_ns, channel, value). Level 0
//                                    (periods) only in a store written
//                                    before schema 15, until retention
//                                    deletes those rows
//   period_values(chunk, data)       (I15) the same for the periods: every
//                                    clock's values of the periods starting
//                                    in one chunk (the hour, as rollup's),
//                                    packed into one blob
//                                    (period_values.cc)
//   rail_chunks(id, t_ns, end_ns,    rail samples taken at a boosted rate,
//     count, data)                   a chunk per row (rail_samples.h); they
//                                    go with the raw frames of their time
//                                    and are capped at RailBytesCap bytes
//   push_cursors(destination, seq,   (I16) per push destination: the last
//     realtime_ns, window_end_ns,    frame and the last closed window its
//     window_id, updated_ns)         receiver acknowledged
//
// Why one row per frame, in blocks (I18): a frame of ~145 channels cost ~475 bytes on disk
// written whole with a time index (blob ~430 B of varints, row header,
// seq/time columns, index entry); against its base (I17) and without the
// index, 253 B for store_bench's random values and a blob of ~120 B on a
// simulated board; against ~25-40 B per value for a row per (time, channel). A rollup row is
// ~32 B: one per channel and period keeps one channel's history a primary-key
// range scan.
//
// Reads. Range/Latest decode the blobs of the frames of a seq range, found
// by bisecting the seqs for the range's times (I11). Downsample at a step of at least one rollup
// period reads a channel's rollup rows (each in the step holding its period's start) plus the raw
// frames after meta.rollup_seq, taking a whole month's, day's or block's rows that fall in one step
// from its span_stats row (I15): a year to one step reads about 12 + 2 x 29 + 2 x 23 + 2 x 59
// rows (365 + 2 x 23 + 2 x 59 without months); a finer step
// scans the raw frames wherever the raw tier holds them, in seq order, decoding only the one value
// (FindValue), and rows only for retired periods. 24 h of 1 Hz frames to 1000
// points: ~0.2 ms from the rollup tier, ~30 ms forced from raw (store_bench).
//
// Invariants (numbers are referred to in the store's source files;
// ring_store_impl.h says which file holds what):
//
//   1. One writer. Only the writer thread writes, on its own connection. Every
//      write is a transaction that leaves all invariants true, so a process
//      killed at any instant (kill -9) leaves a database that opens, passes
//      integrity_check and loses at most the frames that were still queued or
//      in the batch being committed.
//   2. seq is strictly increasing in insertion order and continues after a
//      restart from MAX(seq)+1 (next_seq()). A frame's seq is
//      max(frame.seq, next_seq()); rows are never reordered or rewritten.
//      boottime_ns is stored as the frame carries it; realtime_ns too,
//      unless that would go back in time (I11).
//   3. Missing is not zero: an absent value has no entry in the blob and
//      reads back as nullopt; no sentinel is ever stored.
//   4. A channel key maps to the same store id forever. A new inventory adds
//      rows; it never deletes a channel or rewrites history.
//   5. Raw retention is by elapsed CLOCK_BOOTTIME, which no wall-clock step
//      can fake. Frames fall into boot segments (a new segment where
//      boottime_ns goes down in seq order; their first seqs are kept in
//      the boots table, so Open() needs no scan). After every commit no
//      frame of the newest segment has boottime_ns < newest.boottime_ns -
//      raw_retention - expire_step (newest = the last frame written; with
//      expire_step 0, exactly the retention). A commit whose batch's rows
//      fill a few pages (kExpireWithBatchPages) expires frames whatever
//      expire_step, and before it inserts the batch, so that the pages the
//      expired frames free take its rows in the same transaction (each page
//      written once, refilled, instead of emptied and then refilled by the
//      next commit). A frame of an earlier
//      segment is deleted only when a lower bound of its age exceeds
//      raw_retention: (its segment's last boottime_ns - its boottime_ns) plus
//      the last boottime_ns of every later segment (each boot lasted at least
//      that long; the time powered off is unknown and not counted). A
//      frame's age is never taken from realtime_ns, so a frame whose age is
//      unknown is kept rather than deleted (the size cap, I6, still bounds
//      the file). The same commit deletes rollup rows with t_ns < newest
//      realtime - rollup_retention (with rollup_write_frames, only once the
//      cutoff passes a day boundary, SpanLength(period, 2): a row outlives it
//      by at most a day) and windows that ended before newest
//      realtime - max(raw_retention, rollup_retention) (open windows are
//      kept), and clock_jumps rows older than the same cutoff. (These
//      still follow stored wall time: a forward step longer than
//      rollup_retention minus the rollup tier's span drops rollup rows.)
//      A commit that trims for size (I6) also deletes the closed windows that
//      ended before the oldest data left (raw frame or rollup row).
//   6. Size: with max_bytes > 0 the database file never exceeds max_bytes
//      once Open() returns (while it migrates a schema-8 store, see I7).
//      PRAGMA max_page_count = max_bytes / page_size makes SQLite refuse to
//      grow the file past it (a write that would fails with SQLITE_FULL and
//      rolls back; nothing is half-written). Before each batch the writer
//      measures used pages (page_count - freelist_count) and, if the batch
//      would not fit under 95% of the cap, deletes the oldest data in the
//      same transaction until it does; deleted pages go to the freelist and
//      are reused, so the file stops growing at the cap. The oldest data is
//      taken from whichever tier holds the larger fraction of its own
//      retention (raw frames by seq, or rollup periods), so both tiers
//      shrink in proportion. If the cap is lowered below the file's size,
//      Open() trims, then shrinks the file first: VACUUM (through a
//      temporary file, then the WAL, which for that one transaction holds
//      the whole store), or incremental_vacuum in a store made with
//      auto_vacuum=INCREMENTAL.
//      The WAL is a separate file: the writer checkpoints it (PASSIVE,
//      automatically) every min(kMaxWalPages, cap/16 pages) pages and
//      SQLite truncates it to that size (journal_size_limit) when it
//      restarts, so it holds about one checkpoint interval plus the largest
//      transaction. A transaction holds at most batch_frames frames (and at
//      most cap/16 bytes of them), however long the queue. Measured with a
//      2 MiB cap and 200-frame batches of 144 channels: WAL <= 0.75 MiB.
//      Stats() reports db_bytes and wal_bytes.
//   7. The rollup tier holds, for every closed period and channel, the exact
//      min, max, sum and count of the values of the frames with seq <=
//      meta.rollup_seq. The open period lives in the writer's memory, and so
//      do closed periods held back by rollup_write_frames (written together
//      with the commit that finds them due, RollupDue(); a commit that trims
//      frames for size writes them first); readers take every frame after
//      rollup_seq from the raw tier. After a crash Open() rebuilds them from
//      the raw frames with seq > rollup_seq (all of them while raw retention
//      is at least one period, or two blocks when periods are held back).
//      Close() writes the open period and the held ones (later frames of the
//      same period merge into the row). The rows are kept by (chunk,
//      channel, t_ns), chunk = floor(t_ns / 1 h): a write of held periods
//      goes into the table's newest hour (tens of pages) instead of into every
//      channel's rows (a page or more per channel); one channel's rows are
//      read a chunk at a time, within the hours rollup_channels gives it,
//      and a neighbour row is found by walking the chunks from t's own; a
//      walk that finds nothing in a chunk jumps to the next chunk that
//      holds any row. Schema 9 moved an older store's rows a day per
//      transaction, so the file grows by about a day of rows, not a second
//      table, plus the chunk column (8% of the rows' size); it may pass
//      max_bytes while they move, and Open() trims it back under (I6)
//      before it returns. Since schema 14 a row holds a chunk's periods of
//      one channel, packed (PackRollup: a few bytes a period, where a row
//      of its own took about 30); a write reads the chunk's row of each
//      channel it adds to and merges (a period written twice folds into
//      one), and retention rewrites the rows of the cutoff's chunk without
//      their periods before it. A row that does not unpack reads as missing
//      and is replaced by the next write to it. Schema 14 packs an older
//      store's rows a day of chunks per transaction, as schema 9 did.
//   8. Energy counters (kFlagCounter) are stored non-decreasing: if a value
//      is lower than the last stored one (the daemon restarted without
//      seeding its integrator from LastCounters()), the store adds an offset
//      so the stored series continues from the last stored value. The energy
//      of any window is then CounterAt(t1) - CounterAt(t0).
//   9. Readers never block the writer and never hold a long transaction:
//      each read API call takes a pooled read connection, runs in one short
//      read transaction (a consistent snapshot), and returns it. The
//      *WithQueued reads also see the frames not yet committed: the writer
//      takes its queue in (no commit), they copy its encoded rows under
//      batch_mu_ (which the writer holds only to append a row or clear
//      them after a commit), then read the committed frames up to the
//      copy's first seq (RangeWithQueued) or their snapshot's newest
//      (DownsampleWithQueued): each frame once, whenever a commit lands.
//  11. Wall-clock steps. Stored realtime_ns never decreases in seq order,
//      across restarts and reboots. A frame whose realtime is behind the
//      last frame ingested is stamped last.realtime + (its boottime -
//      last.boottime) within one boot (+0 for the first frame of a new
//      boot): stored time goes on at boottime's pace from the newest frame
//      until the wall clock catches up (the sampler applies the same rule
//      to live frames). A forward step is believed (it is how a board
//      without an RTC battery, booted in 1970 or at its last shutdown time,
//      gets the right time from NTP): frames after it carry the new time,
//      and if the clock is then stepped back they stay ahead, at boottime's
//      pace, until it catches up. A step is a change of realtime - boottime
//      by more than 1 s between two frames of one boot (carried values); each
//      is recorded in clock_jumps (the boottime and stored realtime of the
//      first frame after it, the offsets before and after) and reported once
//      (StoreEvent kClockJump). A backward step that the sampler already
//      absorbed leaves the carried offset unchanged and nothing is recorded:
//      stored time did not move (edgemond logs every step, either way, once,
//      from the sampler's on_clock_step). Summarize notes the
//      steps recorded inside its range. Reads rely on it: the frames of a
//      time range are a range of seqs, found by bisecting the seqs with
//      rowid probes (FirstSeqAt), with no index on time since schema 12.
//  12. Windows never cost history: the windows table holds at most
//      max_windows() rows (labels are short), a small fraction of max_bytes.
//      Opening one beyond it deletes the oldest closed windows first; when
//      every row is an open window the open is refused. Window rows are
//      never a reason to delete frames or rollup rows.
//  13. Damage. A statement that fails with SQLITE_CORRUPT, SQLITE_NOTADB or
//      a read error (IOERR_READ, IOERR_SHORT_READ, IOERR_CORRUPTFS,
//      IOERR_DATA), on the writer's connection or a reader's, marks the
//      store damaged for good (damaged(), StoreStats::damage): on_event gets
//      kDamaged once, naming the file and what failed. From then on the
//      writer writes nothing to the file (a batch is dropped and counted, as
//      in kFailing; window operations fail), Close() does not checkpoint and
//      returns a DATA_LOSS error; reads are still tried (what is intact
//      is still served). A disk-full or write error is not damage.
//  14. A frame whose blob does not decode (frame_codec.h) is skipped by every
//      read, never fails the read: Range/Latest count it in
//      FrameSet::bad_frames, Downsample in its bad_frames argument, and
//      CounterAt interpolates across it. Such a blob passes quick_check
//      (SQLite does not look inside it), so only reads can find it.
//  15. Span aggregates. When a rollup period closes, the writer writes its
//      spans row and its clock values (into its chunk's period_values row)
//      in the same transaction as its rollup rows, from the same frames
//      (stored realtime, after I11); a later part of the same period (after
//      a restart) merges into them.
//      Once a period of a later block is written, the closed blocks before
//      it are written from their periods' rows (span_stats from the rollup
//      rows); once a period of a later day is written, the closed days
//      likewise (level 2, from the same period rows); once a period of a
//      later month is written, the closed months (level 3) from their days'
//      rows (span_stats from the days' span_stats), but only a month that
//      starts at or after meta.spans_from_ns and whose days' spans hold
//      every frame its periods' spans hold (no period of it without its
//      day's row): another month has no level-3 rows and is read by day.
//      A closed block's, day's or month's rollup rows never change after
//      that (stored time never goes back, I11), so its span_stats stay the
//      exact totals of the rollup rows in it while it is held. Rows are
//      deleted with the rollup rows of their period (I5 retention, I6
//      trimming): every row starting before the cutoff, so a block, day or
//      month row is held only while all of its periods' rows are. The periods' clock values of an
//      hour are one packed row (period_values), so an hour's write of them fills a few
//      overflow pages, and its retention deletes whole rows (the cutoff's hour's row
//      rewritten without the periods before it); the blocks', days' and months' clock
//      values lead with (level, t_ns), so a block's values for every clock are written
//      into a page or two, and deleted as one range per level. A block's span_stats rows lead with
//      (level, SpanChunk: its day), so a block's rows of every channel go
//      into that day's pages (a channel's blocks are read a day at a time);
//      a day's and a month's rows have chunk 0, so they are kept by
//      channel. Downsample answers a step holding whole blocks, days or
//      months from their span_stats (a year's peaks read about 12 months,
//      2 x 29 days and 2 x 23 blocks per channel), and Summarize whole spans
//      from Spans(). A span describes exactly
//      the frames held in [t_ns, t_ns + span_ns) when: span_ns is the current period (or block)
//      length, t_ns >= meta.spans_from_ns (periods before the schema upgrade are not described),
//      bad = 0 (a batch dropped after its frames were folded, or a frame that did not decode when
//      the open period was rebuilt, marks it), first_seq >= the oldest seq held (frames are only
//      ever deleted as a seq prefix, I5/I6), and it lies before the open
//      period. Spans() returns only such spans. A frame blob damaged after
//      it was written (I14) is still counted in its span as written: only a
//      read of the frames finds it.
//  16. Push cursors. A push_cursors row holds what one destination's
//      receiver acknowledged (a 2xx): the seq and stored time of the last
//      frame, and (end_ns, id) of the last closed window. The shipper
//      (daemon/push) writes it through the writer (I1) only after the
//      receiver's answer: a cursor at a committed frame in its own small
//      transaction (one page of WAL; it does not commit the queued frames
//      early), one at a frame still queued (FramesAfterWithQueued) held by
//      the writer and written in the transaction that stores that frame
//      (GetPushCursor answers with it meanwhile), so that the file never
//      holds a cursor past its own frames: after a power cut the next
//      boot's frames take those seqs again. A process killed at any instant
//      resends at most the batch in flight and the frames acknowledged since
//      the last commit (a receiver takes a sample it already has as the
//      same sample). Rows are never
//      deleted by retention or trimming (one row per destination ever
//      configured, a few dozen bytes each); frames are deleted whatever
//      the cursors say: a cursor older than the oldest frame held is the
//      shipper's to notice (FramesAfter returns frames after a hole).
//  17. Frames against bases. The writer writes each frame as its
//      differences from a base (frame_codec.h, version 2): a frame of the
//      same ids, stored in frame_bases in the same transaction as the first
//      frame written against it. A new base is made for the first frame
//      after Open(), when the ids present change, and every 256 frames; a
//      frame whose differences would take more than its own encoding is
//      written as version 1. Bases are made in seq order, so a frame's base
//      is never older than an older frame's: after a commit that trimmed
//      frames (I6) or expired them by expire_step (I5; not with every long
//      batch's expiry: each drop rewrites the head of frame_bases), the
//      bases older than the one the oldest version-2 frame needs are
//      deleted (none while no version-2 frame is among the oldest 512).
//      Frame rows are still never rewritten, and frames written before
//      schema 10 stay version 1. A reader decodes through FrameReader
//      (ring_store_impl.h); a frame whose base is missing is a frame that
//      does not decode (I14). The writer keeps the current base in memory
//      and takes a new one into it only once its transaction commits.
//  18. Frames in blocks. The writer writes a commit's frames in blocks of
//      up to kMaxBlockFrames frames and kBlockTargetBytes of their own
//      blobs (frame_codec.h, versions 3 and 4): the first
//      frame's row holds every frame's blob of the block, compressed
//      (zlib), and each later frame's row refers to it by its seq and place.
//      A block never spans two commits or two boot segments, and is
//      written only when it takes fewer bytes than its frames alone. The
//      rows keep their seq and times, so every seq and time query is
//      unchanged; FrameReader reads a block's frames through its head (the
//      last block read is kept). Blocks go whole: expiry (I5) keeps the
//      block of the first frame it keeps, so up to a block more than the
//      retention stays, and a trim (I6) deletes through the end of the
//      block of its last frame. A frame whose head is gone is a frame that
//      does not decode (I14). Frames written before schema 16 stay as they
//      are.
//  19. No access times. Open() sets the no-atime inode flag (chattr +A) on
//      the database, its -wal and its -shm where the file system has inode
//      flags, so that a read after a commit does not update an atime (under
//      relatime, a journal commit of the inode each time). It sets it
//      through the descriptors SQLite holds (the process's fd directory),
//      never one of its own: closing that would drop SQLite's POSIX locks on
//      the file. Where the flag cannot be set the store works the same.
//  10. Files are never deleted. A file that is not an edgemon store (not
//      SQLite, fails quick_check, foreign application_id or schema) is an
//      error from Open(); with recreate_bad it is renamed (with its -wal and
//      -shm) to `<path>.bad-<UTC time>` and a new store is created. A store
//      written by a newer schema is always an error, never renamed. These
//      errors (and damage found while opening) have code StatusCode::kDataLoss.
//
// Writer states (WriterState):
//
//   kIdle ──(batch_frames queued, commit_interval elapsed, Flush, window
//            op)──▶ kCommitting ──ok──▶ kIdle
//   kCommitting ──SQLITE_FULL / I/O error──▶ kFailing: the batch is dropped
//            and counted (dropped_batches, dropped_frames), on_event gets
//            kWriteFailed at most once a minute; Append keeps accepting.
//   kFailing ──a later commit succeeds──▶ kIdle, on_event gets kResumed.
//   any ──damage found (I13)──▶ kFailing for good: no write is tried any more,
//            each batch is dropped and counted; on_event got kDamaged once
//            (no kWriteFailed, no kResumed).
//   any ──Close()──▶ drains the queue, writes the open rollup period,
//            checkpoints ──▶ kStopped (Append drops and counts).
//
// Append() never blocks on I/O: it copies the frame into an in-memory queue
// (bounded by max_queued_frames; beyond it the new frame is dropped and
// counted) under a mutex the writer holds only to swap the queue out.
//
// Thread safety: every public method may be called from any thread
// concurrently, except that Close() and the destructor must not race with
// other calls. Appends and SetInventory are applied in the order they were
// made. on_event runs on the writer thread (kDamaged: on whichever thread's
// statement found the damage, a reader's included): it must not block for
// long and must not call Flush(), Close() or the window methods (they wait
// for the writer). Results are values owned by the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/rail_samples.h"
#include "edgemon/channel.h"
#include "edgemon/checked.h"
#include "edgemon/clock.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::store {

inline constexpr int kSchemaVersion = 16;
// (I6) The most pages the WAL holds before the writer checkpoints it (32 MiB
// of 4 KiB pages; a cap lowers it to cap/16). A checkpoint writes each page
// changed since the last one once, however many commits changed it: the
// pages that every commit or every write of held periods touches again (the
// end of the frames table and its index, the rollup rows' last page of each
// channel) go to the database file once per checkpoint, so a longer interval
// writes less flash.
inline constexpr int64_t kMaxWalPages = 8192;
// Rollup periods per level-1 span (I15): an hour at the default period.
inline constexpr int64_t kBlockPeriods = 60;
// Level-1 spans per level-2 span (I15): a day at the default period.
inline constexpr int64_t kDayBlocks = 24;
// Level-2 spans per level-3 span (I15): 30 days at the default period, on
// the epoch's grid (not calendar months).
inline constexpr int64_t kMonthDays = 30;
// The coarsest span level: 0 a period, 1 a block, 2 a day, 3 a month.
inline constexpr int kTopSpanLevel = 3;
// The length of a span of `level` (I15) with rollup periods of `period_ns`.
constexpr int64_t SpanLength(int64_t period_ns, int level) {
  return level <= 0   ? period_ns
         : level == 1 ? MulSaturating(period_ns, kBlockPeriods)
         : level == 2 ? MulSaturating(period_ns, kBlockPeriods * kDayBlocks)
                      : MulSaturating(period_ns, kBlockPeriods * kDayBlocks * kMonthDays);
}

// The channels whose per-span value counts the store keeps (I15): CPU, GPU
// and EMC frequencies (a summary's clock residency).
bool IsClock(const Channel& c);
inline constexpr int32_t kApplicationId = 0x4544474d;  // 'EDGM'

enum class WriterState : uint8_t { kIdle, kCommitting, kFailing, kStopped };
std::string_view ToString(WriterState s);

struct StoreEvent {
  enum class Kind : uint8_t {
    kWriteFailed,  // a batch could not be written (disk full, I/O error); rate-limited
    kResumed,      // a commit succeeded after failures
    kRecreated,    // Open() moved a bad file aside (message names the new path)
    kClockJump,    // the wall clock stepped (I11); once per step
    kDamaged,      // the file is damaged (I13); once, from the thread that found it
  };
  Kind kind;
  std::string message;
  uint64_t dropped_batches = 0;  // so far
};

struct RingStoreOptions {
  // Raw tier: every frame, kept this long (by realtime_ns, relative to the
  // newest frame written).
  int64_t raw_retention_ns = 7 * 86400 * 1'000'000'000LL;
  // (I5) Expired frames are deleted by the commit whose newest frame is at
  // least this much boottime past the last deletion (0: by every commit),
  // and by every commit of a batch whose rows fill a few pages. A frame
  // then outlives raw_retention by up to this much; each deletion rewrites
  // the page at the head of the frames table, so for short batches fewer
  // deletions write less flash.
  int64_t expire_step_ns = 0;
  // Rollup tier: per-period min/avg/max per channel, kept this long.
  int64_t rollup_period_ns = 60 * 1'000'000'000LL;
  int64_t rollup_retention_ns = 60 * 86400 * 1'000'000'000LL;
  // Hard cap on the database file in bytes (0 = none). At least 256 KiB.
  int64_t max_bytes = 0;
  // Commit when this many frames are waiting, or commit_interval_ms after
  // the first of them was queued, or on Flush(). The writer takes waiting
  // frames in (encodes them into the batch's rows) 64 at a time, so the
  // queue holds few frames however long the interval.
  size_t batch_frames = 256;
  int64_t commit_interval_ms = 5000;
  // (I7) Closed rollup periods are held in memory and written together once
  // they hold this many frames, or a period of a later block (I15) has
  // closed, or the store closes; until then readers take them from the raw
  // frames. 0: each period with the commit after it closes. Each write
  // touches about one page per channel (the rollup rows are kept by
  // channel), so writing them together saves that many page writes per
  // period. Applies only while raw_retention is at least two blocks.
  size_t rollup_write_frames = 0;
  // Frames queued beyond this are dropped (and counted) rather than grow
  // memory while the disk stalls.
  size_t max_queued_frames = 100'000;
  // Rename a bad file aside and start afresh instead of failing Open().
  bool recreate_bad = false;
  // Idle read connections kept open for reuse.
  size_t max_idle_readers = 4;
  // Read connections map up to this many bytes of the file (0 = off).
  // SQLite page cache per connection (writer and each reader), in KiB.
  // SQLite's default is 2000 KiB; a small daemon can use less.
  int64_t cache_kib = 2000;
  int64_t reader_mmap_bytes = 256LL << 20;
  // Called on the writer thread (and once from Open for kRecreated, and
  // once from whichever thread found it for kDamaged).
  std::function<void(const StoreEvent&)> on_event;
  // The clock the store reads (frames bring their own times): the wall
  // clock for a channel's first_seen_ns and a bad file's .bad-<time> name,
  // the monotonic clock for commit_interval_ms and the once-a-minute
  // kWriteFailed. Null: the system clock. Must outlive the store.
  Clock* clock = nullptr;
  // For tests: run by RangeWithQueued and DownsampleWithQueued between
  // copying the writer's rows and reading the committed frames (where a
  // commit may land). Null: nothing.
  std::function<void()> after_queued_copy;
};

// A channel as the store knows it. channel.id is the column index in the
// result it comes with (so frame.Get(channel.id) works); store_id is the
// store-local stable id.
struct StoredChannel {
  int64_t store_id = 0;
  std::string key;  // Channel::Key() as stored
  Channel channel;
  int64_t first_seen_ns = 0;  // realtime when the store first saw it
};

// Frames read back: frames[i].values[c] is the value of channels[c].
struct FrameSet {
  std::vector<StoredChannel> channels;
  std::vector<Frame> frames;
  bool truncated = false;   // more frames matched than the limit
  uint64_t bad_frames = 0;  // frames in the range whose data did not decode, left out (I14)
};

// The most steps one Downsample computes (one accumulator each).
inline constexpr uint64_t kMaxDownsampleSteps = 1'000'000;

// Downsample's steps and the windows are the model's (include/edgemon/model.h).
using edgemon::Bucket;
using edgemon::Window;

enum class Tier : uint8_t {
  kAuto,    // step >= rollup period: rollup (+ raw tail); finer: raw, rollup where retired
  kRaw,     // raw frames only
  kRollup,  // rollup rows (+ raw frames newer than the last rollup write)
};

// A wall-clock step seen while writing (I11): offsets are realtime -
// boottime of the frames before and after it.
struct ClockJump {
  int64_t boottime_ns = 0;
  int64_t realtime_ns = 0;  // stored realtime of the first frame after it
  int64_t old_offset_ns = 0;
  int64_t new_offset_ns = 0;
};

// (I15) The frames of one closed rollup period (level 0), block of
// kBlockPeriods periods (level 1), day of kDayBlocks blocks (level 2) or
// month of kMonthDays days (level 3), as the writer folded them.
struct Span {
  int level = 0;
  int64_t t_ns = 0;    // start
  int64_t end_ns = 0;  // t_ns + its length
  uint64_t frames = 0;
  uint64_t first_seq = 0;
  int64_t first_ns = 0;
  uint64_t last_seq = 0;
  int64_t last_ns = 0;
  uint64_t holes = 0;       // seqs missing between consecutive frames of the span
  int64_t max_step_ns = 0;  // largest realtime step between frames with consecutive seqs
};

// One channel over consecutive spans (SpanTotals).
struct SpanTotal {
  int64_t count = 0;  // values present
  int64_t min = 0;
  int64_t max = 0;
  double sum = 0;
  // The start of the first rollup period with a value.
  int64_t first_period_ns = 0;
  // Value -> frames that held it, by value (IsClock channels only).
  std::vector<std::pair<int64_t, uint64_t>> values;
};

struct StoreStats {
  int64_t db_bytes = 0;   // main file size on disk
  int64_t wal_bytes = 0;  // -wal file size on disk
  int64_t page_size = 0;
  int64_t page_count = 0;
  int64_t freelist_pages = 0;
  int64_t max_bytes = 0;  // the configured cap (0 = none)
  int64_t frames = 0;
  std::optional<int64_t> oldest_ns;  // realtime of the oldest / newest raw frame
  std::optional<int64_t> newest_ns;
  std::optional<uint64_t> first_seq;
  std::optional<uint64_t> last_seq;
  int64_t rollup_rows = 0;
  int64_t channels = 0;
  int64_t windows = 0;
  WriterState state = WriterState::kIdle;
  uint64_t queued_frames = 0;
  uint64_t writer_wakeups = 0;  // times the writer thread woke to look at its queue
  uint64_t commits = 0;
  uint64_t failed_commits = 0;   // commit attempts that failed (incl. retried ones)
  uint64_t dropped_batches = 0;  // batches given up
  uint64_t dropped_frames = 0;   // frames lost: in dropped batches or queue overflow
  uint64_t trimmed_frames = 0;   // raw frames deleted to honour max_bytes
  uint64_t trimmed_rollup_rows = 0;
  uint64_t expired_frames = 0;  // raw frames deleted by raw_retention
  uint64_t counter_resets = 0;  // see invariant 8
  std::string last_error;
  // (I13) Set once a statement found the file damaged; `damage` says where
  // and what failed.
  bool damaged = false;
  std::string damage;
};

// (I16) What one push destination's receiver acknowledged.
struct PushCursor {
  uint64_t seq = 0;         // the last frame acknowledged (0: none yet)
  int64_t realtime_ns = 0;  // its stored time
  int64_t window_end_ns = std::numeric_limits<int64_t>::min();  // the last closed window
  int64_t window_id = 0;                                        // acknowledged: (end_ns, id)
  friend bool operator==(const PushCursor&, const PushCursor&) = default;
};

class RingStore {
 public:
  // Opens or creates the store at `path` and starts its writer thread.
  static Result<std::unique_ptr<RingStore>> Open(const std::string& path, RingStoreOptions options);
  // Close()s.
  ~RingStore();
  RingStore(const RingStore&) = delete;
  RingStore& operator=(const RingStore&) = delete;

  // Drains the queue, writes the open rollup period, checkpoints and stops
  // the writer. Idempotent. Returns the last write error, if any.
  Status Close();

  // ---- Writing (asynchronous, applied in call order) ----

  // Declares the channels that following frames are indexed by (Frame
  // values[i] belongs to the channel with id i). New keys get new store
  // ids; known keys keep theirs (their description is updated).
  void SetInventory(const Inventory& inventory);
  // Queues a frame; returns the seq it will be stored under (0 if dropped:
  // queue full or store closed). Never blocks on I/O.
  uint64_t Append(Frame frame);
  // The same for a frame shared with others (the sampler's snapshot): the
  // queue holds the pointer, and the store never changes the frame.
  uint64_t Append(std::shared_ptr<const Frame> frame);
  // Commits everything queued before this call. Returns the error of a
  // batch that could not be written, if any.
  Status Flush();
  // Changes commit_interval_ms from the next wait on (a daemon that learns
  // only after Open whether a flight recorder keeps its uncommitted frames).
  void SetCommitInterval(int64_t ms);
  // The seq the next Append will get (at least MAX(seq)+1 of the file).
  uint64_t next_seq() const;
  // One past the newest frame committed to the file: frames below it are
  // durable. Lock-free, for any thread (a frame sink beside the store).
  uint64_t committed_next_seq() const;
  // The stored realtime of the newest frame committed (INT64_MIN before
  // any): every frame still queued is stored at or after it (I11), so a
  // read ending at or before it needs no Flush. Lock-free, for any thread.
  int64_t committed_newest_ns() const;

  // ---- Windows (synchronous: committed when they return) ----

  // Fails when the windows table holds max_windows() open windows (I12).
  Result<int64_t> BeginWindow(const std::string& label, int64_t start_ns,
                              std::optional<int64_t> lease_ns = std::nullopt,
                              const std::string& owner = {});
  // `result` is stored with the end (WindowResult: for listings of runs).
  Status EndWindow(int64_t id, int64_t end_ns, bool abandoned = false,
                   const WindowResult& result = {});
  // Ends an open window and moves its start to start_ns, at or after the
  // recorded start and at or before end_ns (InvalidArgument otherwise,
  // nothing changed), in one transaction: the work's start as its caller
  // stamped it once BeginWindow had returned.
  Status EndWindowFrom(int64_t id, int64_t start_ns, int64_t end_ns,
                       const WindowResult& result = {});
  Result<int64_t> AddWindow(const std::string& label, int64_t start_ns, int64_t end_ns);
  Result<std::optional<Window>> GetWindow(int64_t id);
  // Windows overlapping [from_ns, to_ns), by (start time, id), at most
  // `limit` (0 = all), after the window `after` = (start_ns, id) if given.
  Result<std::vector<Window>> ListWindows(
      int64_t from_ns, int64_t to_ns, size_t limit = 0,
      std::optional<std::pair<int64_t, int64_t>> after = std::nullopt);
  // Every open window, by id.
  Result<std::vector<Window>> OpenWindows();
  // Closed windows after (end_ns, id), by (end_ns, id), at most `limit`.
  Result<std::vector<Window>> ClosedWindowsAfter(int64_t end_ns, int64_t id, size_t limit);
  // The most rows the windows table holds (I12): max_bytes / 8192 clamped to
  // [64, 65536], 65536 without a size cap.
  size_t max_windows() const;

  // ---- Reading (committed data: Flush() first to see queued frames; the *WithQueued
  // reads see them without) ----

  Result<std::vector<StoredChannel>> Channels();
  // The newest frame (at most one), with all channels or the given keys.
  Result<FrameSet> Latest(const std::vector<std::string>& keys = {});
  // Frames with from_ns <= realtime_ns < to_ns in time order (seq order for
  // equal times), at most `limit` of them (0 = no limit), oldest first.
  // `keys` selects columns (empty = every channel). An unknown key is an
  // error.
  Result<FrameSet> Range(int64_t from_ns, int64_t to_ns, const std::vector<std::string>& keys,
                         size_t limit);
  // Range, with the frames still queued for the batched writer that fall in
  // it read from memory: what Flush() then Range would read, without the
  // commit (a client that polls the newest frames costs no flash). The
  // writer takes the queued frames in first, so the call waits for it as
  // Flush() does, and commits first only when a channel's row is not
  // committed yet (a new channel, a changed description).
  Result<FrameSet> RangeWithQueued(int64_t from_ns, int64_t to_ns,
                                   const std::vector<std::string>& keys, size_t limit);
  // The times of the frames Range(from_ns, to_ns, ..., limit) would read,
  // from the time index alone (no frame is decoded, so one that Range would
  // skip as undecodable, I14, is here too).
  Result<std::vector<int64_t>> FrameTimes(int64_t from_ns, int64_t to_ns, size_t limit);
  // FrameTimes with the times of the frames still queued for the batched
  // writer, as RangeWithQueued reads them.
  Result<std::vector<int64_t>> FrameTimesWithQueued(int64_t from_ns, int64_t to_ns, size_t limit);
  // Frames with seq > after_seq in seq order, at most `limit` (0 = no
  // limit), every channel: a push destination's next batch.
  Result<FrameSet> FramesAfter(uint64_t after_seq, size_t limit);
  // FramesAfter with the frames still queued for the batched writer read
  // from memory, as RangeWithQueued reads them (a push destination that
  // caught up with the committed frames).
  Result<FrameSet> FramesAfterWithQueued(uint64_t after_seq, size_t limit);

  // ---- Push cursors (I16) ----

  // ---- Rail samples (rail_samples.h) ----

  // Queues a chunk for the writer; never blocks (a chunk beyond the queue's
  // bound is dropped).
  void AppendRailChunk(RailChunk chunk);
  // The committed rail samples with from_ns <= t < to_ns, in time order, at
  // most `limit` (0 or more than kMaxRailSamplesPerRead: that many).
  Result<RailSamples> RailSamplesBetween(int64_t from_ns, int64_t to_ns, size_t limit);

  // nullopt: the destination never had a batch acknowledged.
  Result<std::optional<PushCursor>> GetPushCursor(const std::string& destination);
  // Committed when it returns (through the writer, like the window methods).
  Status SetPushCursor(const std::string& destination, const PushCursor& cursor);
  // One channel downsampled to steps [from + k*step, from + (k+1)*step).
  // Steps without a value are left out. From the rollup tier, each period's
  // row counts in the step that holds the period's start. A step is dated at
  // its start, or at its first value where that is later (a rollup row's
  // value: its period's start). Raw frames whose data does not decode are
  // skipped and, with `bad_frames`, counted there.
  // Any int64 bounds (the range may be wider than int64: 1678 to 2262);
  // more than kMaxDownsampleSteps steps (BucketCount, checked.h) is
  // INVALID_ARGUMENT, and so is a step <= 0.
  Result<std::vector<Bucket>> Downsample(const std::string& key, int64_t from_ns, int64_t to_ns,
                                         int64_t step_ns, Tier tier = Tier::kAuto,
                                         uint64_t* bad_frames = nullptr);
  // Downsample of each of `keys` (in their order) in one read: the same
  // buckets as one call per key, at less cost per key.
  Result<std::vector<std::vector<Bucket>>> DownsampleEach(const std::vector<std::string>& keys,
                                                          int64_t from_ns, int64_t to_ns,
                                                          int64_t step_ns, Tier tier = Tier::kAuto,
                                                          uint64_t* bad_frames = nullptr);
  // Downsample with the frames still queued for the batched writer folded
  // in from memory, as RangeWithQueued reads them: what Flush() then
  // Downsample would answer, without the commit.
  Result<std::vector<Bucket>> DownsampleWithQueued(const std::string& key, int64_t from_ns,
                                                   int64_t to_ns, int64_t step_ns,
                                                   Tier tier = Tier::kAuto,
                                                   uint64_t* bad_frames = nullptr);
  Result<std::vector<std::vector<Bucket>>> DownsampleEachWithQueued(
      const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
      Tier tier = Tier::kAuto, uint64_t* bad_frames = nullptr);
  // A counter channel's value at realtime t, interpolated linearly between
  // the stored values around t (raw tier; the rollup tier, at period
  // precision, for times older than the raw tier). nullopt outside the data.
  Result<std::optional<double>> CounterAt(const std::string& key, int64_t realtime_ns);
  // CounterAt with the readings of the frames still queued for the batched
  // writer, as RangeWithQueued reads them: what Flush() then CounterAt would
  // answer, without the commit.
  Result<std::optional<double>> CounterAtWithQueued(const std::string& key, int64_t realtime_ns);
  // CounterAt(t1) - CounterAt(t0): energy in mJ for an energy channel.
  Result<std::optional<double>> EnergyBetween(const std::string& key, int64_t t0_ns, int64_t t1_ns);
  // The last stored value of every counter channel, to seed the energy
  // integrator after a restart.
  Result<std::map<std::string, int64_t>> LastCounters();
  Result<StoreStats> Stats();
  // The statement Stats() reads the raw tier's time and seq bounds with:
  // index lookups only, never a scan of the frames table (tested through
  // its query plan).
  static const char* const kFrameBoundsSql;
  // What Stats() knows without reading the file: the writer's counters,
  // the file sizes, the cap and the damage flag (size and row fields are
  // left at their defaults). Never fails; for when Stats() does.
  StoreStats Counters();
  // Rows SQLite returned to the readers so far (a read's cost, for
  // benchmarks; an aggregate's rows count once per group).
  uint64_t rows_read() const;
  // (I13) Whether a statement found the file damaged, and what it said.
  bool damaged() const;
  std::string damage() const;
  // Realtime of the oldest data held in either tier (nullopt: empty store).
  Result<std::optional<int64_t>> OldestNs();
  // (I15) The spans lying inside [from_ns, to_ns) that describe exactly
  // the frames held there, in time order, without overlap: a day where one
  // qualifies, else its blocks where they do, else their periods. Only spans whose max_step_ns is
  // at most `max_step_ns`.
  Result<std::vector<Span>> Spans(int64_t from_ns, int64_t to_ns, int64_t max_step_ns);
  // (I15) Per key, the totals over `spans` (consecutive, from Spans()):
  // nullopt where the channel had no value in them.
  Result<std::vector<std::optional<SpanTotal>>> SpanTotals(const std::vector<std::string>& keys,
                                                           const std::vector<Span>& spans);
  // The length of a rollup period.
  int64_t rollup_period_ns() const;
  // Wall-clock steps recorded with a stored realtime in [from, to) (I11).
  Result<std::vector<ClockJump>> ClockJumps(int64_t from_ns, int64_t to_ns);
  // PRAGMA integrity_check (reads the whole file).
  Status IntegrityCheck();

  // Test hook: sets PRAGMA max_page_count on the writer's connection (ring
  // trimming is not applied to this limit), to simulate a full disk.
  Status SetMaxPageCountForTesting(int64_t pages);

  class Impl;

 private:
  explicit RingStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A store read or write that failed: DATA_LOSS once the store's file was
// found damaged (invariant 13), else INTERNAL. `what` is the message.
inline Status StoreFailure(const RingStore& store, const std::string& what) {
  if (store.damaged()) return Status::DataLoss(what + " (the store is damaged)");
  return Status::Internal(what);
}

}  // namespace edgemon::store
