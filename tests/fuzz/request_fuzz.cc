// libFuzzer target: whole request messages, with any int64 in their time and
// count fields, against a real store and the real request handlers.
//
// Input: one byte picks the message (Query, Summarize, ListWindows,
// BeginWindow, EndWindow, Boost); the rest is that message, serialized. Each
// decoded message goes twice:
//   1. its fields, unvalidated, straight into the RingStore's reads
//      (Downsample on every tier, Range, CounterAt, EnergyBetween,
//      ListWindows, ClockJumps, GetWindow): the store must take any int64
//      bounds and step (the service is not its only caller);
//   2. through a real server (in-process channel) to the service's handlers,
//      which validate and answer or refuse.
// The store holds frames sampled from a fixture board now, and frames at
// INT64_MIN + 1 and INT64_MAX - 1. Built with UBSan that does not recover
// (the EDGEMON_FUZZ build: -fsanitize=undefined -fno-sanitize-recover=undefined),
// so a signed overflow anywhere on the way aborts the run. The attacks that
// once crashed edgemond (INT64_MIN..INT64_MAX with a 2^62 step; 1678..2262
// with a 3000-day step) run first, in LLVMFuzzerInitialize.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "daemon/store/ring_store.h"
#include "edgemon/checked.h"
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "tests/fuzz/fuzz_server.h"

namespace {

using namespace edgemon;

constexpr int64_t kMin = kInt64Min;
constexpr int64_t kMax = kInt64Max;

// A frame with every channel at an extreme value.
Frame Extreme(const Inventory& inv, int64_t boottime_ns, int64_t realtime_ns) {
  Frame f;
  f.boottime_ns = boottime_ns;
  f.realtime_ns = realtime_ns;
  f.values.resize(inv.channels.size());
  for (size_t i = 0; i < f.values.size(); ++i) f.values[i] = i % 2 ? kMax : kMin;
  return f;
}

struct World {
  // A frame at the very start of int64 time, frames sampled now, and one at
  // its very end: every read spans a range wider than int64.
  World()
      : server("request", [](testing::FuzzServer& s) {
          const auto& inv = s.collection->inventory();
          s.store->SetInventory(inv);
          s.store->Append(Extreme(inv, 1, kMin + 1));
          for (int i = 0; i < 3; ++i) s.sampler->TickOnce();
          if (!s.store->Flush().ok()) std::abort();
          s.store->Append(Extreme(inv, s.clock.BoottimeNs(), kMax - 1));
        }) {
    for (const auto& c : server.collection->inventory().channels) keys.push_back(c.Key());
  }
  testing::FuzzServer server;
  store::RingStore* store = server.store.get();
  v1::Telemetry::Stub* stub = server.stub.get();
  std::vector<std::string> keys;
};

World& TheWorld() {
  static World* world = new World();  // lives for the whole run
  return *world;
}

// A bucket outside its range, two in one step, or out of order is a wrong
// index. A bucket is dated at its step's start or at its first value, where
// that is later (ring_store.h): inside its step either way.
void CheckBuckets(const std::vector<store::Bucket>& buckets, int64_t from, int64_t to,
                  int64_t step) {
  uint64_t last_step = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    if (b.t_ns < from || b.t_ns >= to || b.count <= 0 || b.min > b.max) std::abort();
    const uint64_t k = SpanNs(from, b.t_ns) / static_cast<uint64_t>(step);
    if (i > 0 && k <= last_step) std::abort();
    last_step = k;
  }
}

// 1. The store, with the message's fields as they came.
void StoreReads(int64_t from, int64_t to, int64_t step, size_t key_pick, uint32_t limit) {
  World& w = TheWorld();
  const std::string& key = w.keys[key_pick % w.keys.size()];
  for (auto tier : {store::Tier::kAuto, store::Tier::kRaw, store::Tier::kRollup}) {
    uint64_t bad = 0;
    auto b = w.store->Downsample(key, from, to, step, tier, &bad);
    if (b.ok()) {
      if (step <= 0 || BucketCount(from, to, step) > store::kMaxDownsampleSteps) std::abort();
      CheckBuckets(*b, from, to, step);
    } else if (b.status().code() != StatusCode::kInvalidArgument) {
      std::abort();  // the only refusal: a step <= 0 or too many steps
    }
  }
  (void)w.store->Range(from, to, {key}, limit % 64);
  (void)w.store->CounterAt(key, from);
  (void)w.store->EnergyBetween(key, from, to);
  (void)w.store->ClockJumps(from, to);
  (void)w.store->ListWindows(from, to, limit % 64, std::pair{from, to});
}

void Deadline(grpc::ClientContext& ctx, int ms) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

template <typename Req, typename Resp>
void Unary(grpc::Status (v1::Telemetry::Stub::*call)(grpc::ClientContext*, const Req&, Resp*),
           const Req& req) {
  grpc::ClientContext ctx;
  Deadline(ctx, 10'000);
  Resp resp;
  grpc::Status s = (TheWorld().stub->*call)(&ctx, req, &resp);
  // A handler that ran out of time would hide a hang: fail loudly.
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) std::abort();
}

// 2. The service: validation and the handler behind it.
void Query(v1::QueryRequest req) {
  World& w = TheWorld();
  // One channel (api_fuzz covers the channel selection): a million steps of
  // every channel would be slow, not wrong.
  const size_t pick = req.channels_size() > 0 ? req.channels(0).size() : 0;
  req.clear_channels();
  req.add_channels(w.keys[pick % w.keys.size()]);
  StoreReads(req.from_ns(), req.to_ns(), req.step_ns(), pick, req.limit());
  grpc::ClientContext ctx;
  Deadline(ctx, 10'000);
  auto reader = w.stub->Query(&ctx, req);
  v1::QueryChunk chunk;
  int n = 0;
  while (n < 1000 && reader->Read(&chunk)) {
    ++n;
    for (const auto& s : chunk.series()) {
      for (const auto& b : s.buckets()) {
        if (b.t_ns() < req.from_ns() || b.t_ns() >= req.to_ns()) std::abort();
      }
    }
  }
  if (n == 1000) ctx.TryCancel();
  grpc::Status s = reader->Finish();
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) std::abort();
  // Only a request the store would refuse may be refused as invalid, and the
  // service's step count must be the store's.
  if (s.ok() && req.step_ns() > 0 &&
      BucketCount(req.from_ns(), req.to_ns(), req.step_ns()) > store::kMaxDownsampleSteps) {
    std::abort();
  }
}

void Summarize(const v1::SummarizeRequest& req) {
  if (req.has_time()) {
    const int64_t from = req.time().from_ns(), to = req.time().to_ns();
    StoreReads(from, to, SubSaturating(to, from), static_cast<size_t>(FloorMod(from, 997)), 8);
  } else {
    (void)TheWorld().store->GetWindow(req.window_id());
  }
  Unary(&v1::Telemetry::Stub::Summarize, req);
}

void ListWindows(const v1::ListWindowsRequest& req) {
  (void)TheWorld().store->ListWindows(req.from_ns(), req.to_ns(), req.page_size());
  Unary(&v1::Telemetry::Stub::ListWindows, req);
}

void Run(uint8_t which, const uint8_t* data, size_t size) {
  const int n = static_cast<int>(size);
  switch (which % 6) {
    case 0: {
      v1::QueryRequest req;
      if (req.ParseFromArray(data, n)) Query(req);
      break;
    }
    case 1: {
      v1::SummarizeRequest req;
      if (req.ParseFromArray(data, n)) Summarize(req);
      break;
    }
    case 2: {
      v1::ListWindowsRequest req;
      if (req.ParseFromArray(data, n)) ListWindows(req);
      break;
    }
    case 3: {
      v1::BeginWindowRequest req;
      if (req.ParseFromArray(data, n)) Unary(&v1::Telemetry::Stub::BeginWindow, req);
      break;
    }
    case 4: {
      v1::EndWindowRequest req;
      if (req.ParseFromArray(data, n)) {
        (void)TheWorld().store->GetWindow(req.id());
        Unary(&v1::Telemetry::Stub::EndWindow, req);
      }
      break;
    }
    default: {
      v1::BoostRequest req;
      if (req.ParseFromArray(data, n)) Unary(&v1::Telemetry::Stub::Boost, req);
      break;
    }
  }
}

template <typename Msg>
void RunMessage(uint8_t which, const Msg& msg) {
  const std::string bytes = msg.SerializeAsString();
  Run(which, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

v1::QueryRequest QueryOf(int64_t from, int64_t to, int64_t step) {
  v1::QueryRequest q;
  q.set_from_ns(from);
  q.set_to_ns(to);
  q.set_step_ns(step);
  return q;
}

}  // namespace

// The known attacks, before any generated input: a regression fails the run
// in its first second.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  constexpr int64_t k2p62 = int64_t{1} << 62;
  constexpr int64_t k1678 = -9'214'560'000'000'000'000;  // 1678-01-01T00:00:00Z
  constexpr int64_t k2262 = 9'214'646'400'000'000'000;   // 2262-01-01T00:00:00Z
  constexpr int64_t k3000d = int64_t{3000} * 86'400 * 1'000'000'000;
  for (int64_t step : {k2p62, kMax, k3000d, int64_t{1'000'000}, int64_t{1} << 44, int64_t{1} << 45,
                       int64_t{0}, kMin, int64_t{-1}}) {
    RunMessage(0, QueryOf(kMin, kMax, step));
    RunMessage(0, QueryOf(k1678, k2262, step));
    RunMessage(0, QueryOf(kMin, 0, step));
    RunMessage(0, QueryOf(-1, kMax, step));
    RunMessage(0, QueryOf(kMax - 1, kMax, step));
    RunMessage(0, QueryOf(kMin, kMin + 1, step));
  }
  for (auto [from, to] : {std::pair{kMin, kMax}, std::pair{kMin, kMin + 1},
                          std::pair{kMax - 1, kMax}, std::pair{k1678, k2262}}) {
    v1::SummarizeRequest s;
    s.mutable_time()->set_from_ns(from);
    s.mutable_time()->set_to_ns(to);
    RunMessage(1, s);
    v1::ListWindowsRequest l;
    l.set_from_ns(from);
    l.set_to_ns(to);
    l.set_page_token(std::to_string(kMax) + ":" + std::to_string(kMax));
    RunMessage(2, l);
  }
  v1::BeginWindowRequest b;
  b.set_label("fuzz");
  b.set_lease_ms(UINT32_MAX);
  RunMessage(3, b);
  b.set_lease_ms(3'600'000);
  b.set_renew_id(kMax);
  RunMessage(3, b);
  v1::EndWindowRequest e;
  e.set_id(kMin);
  RunMessage(4, e);
  v1::SummarizeRequest by_window;
  by_window.set_window_id(kMax);
  RunMessage(1, by_window);
  v1::BoostRequest boost;
  boost.set_rate_hz(UINT32_MAX);
  boost.set_duration_ms(UINT32_MAX);
  RunMessage(5, boost);
  boost.set_rate_hz(1000);
  boost.set_duration_ms(3'600'000);
  boost.set_lease_id(UINT64_MAX);
  RunMessage(5, boost);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Run(data[0], data + 1, size - 1);
  return 0;
}
