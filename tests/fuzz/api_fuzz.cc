// libFuzzer target: every request handler of the gRPC API. The first byte
// picks an RPC, the rest is decoded as that RPC's request message (bytes that
// do not decode are what the server's own deserialisation turns away) and
// the call goes through a real server, over its in-process channel, to the
// real handlers on a real store and a sampled fixture board. The handlers
// must answer every request with a status and never crash; the same bytes
// are also decoded as the messages a client receives and converted by the
// client library, which must refuse malformed frames.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "client/convert.h"
#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/sampler.h"
#include "daemon/service/server.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "daemon/store/ring_store.h"
#include "daemon/store_sink.h"
#include "edgemon/clock.h"
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "tests/support/temp_tree.h"

namespace {

using namespace edgemon;

struct World {
  World() {
    char tmpl[] = "/tmp/edgemon-api-fuzz.XXXXXX";
    dir = ::mkdtemp(tmpl);
    fs = std::make_unique<RootedSysFs>(testing::Fixture("agx-orin"));
    CollectOptions co;
    collection =
        std::make_unique<Collection>(*fs, MakeDefaultCollectors(co), co, [](const std::string&) {});
    collection->Discover();
    auto st = store::RingStore::Open(dir + "/edgemon.db", store::RingStoreOptions{});
    if (!st.ok()) std::abort();
    store = std::move(st.value());
    hub = std::make_unique<service::WatchHub>(64);
    SamplerOptions sampler_opts;
    sampler_opts.frame_period_ns = 100'000'000;
    sampler_opts.energy_period_ns = 0;
    sampler = std::make_unique<Sampler>(*collection, clock, sampler_opts);
    sampler->AddSink(hub.get());
    sink = std::make_unique<StoreSink>(*store);
    sampler->AddSink(sink.get());
    for (int i = 0; i < 3; ++i) sampler->TickOnce();
    (void)store->Flush();
    service::ServiceOptions opts;
    opts.daemon_version = "fuzz";
    opts.max_rows = 200;
    api = std::make_unique<service::TelemetryService>(*hub, *store, clock, sampler.get(), fs.get(),
                                                      opts);
    server = std::make_unique<service::ApiServer>(*api);
    service::ServerOptions server_opts;
    server_opts.unix_path = dir + "/api.sock";
    if (!server->Start(server_opts).ok()) std::abort();
    stub = v1::Telemetry::NewStub(server->server()->InProcessChannel(grpc::ChannelArguments()));
  }

  std::string dir;
  SystemClock clock;
  std::unique_ptr<RootedSysFs> fs;
  std::unique_ptr<Collection> collection;
  std::unique_ptr<store::RingStore> store;
  std::unique_ptr<service::WatchHub> hub;
  std::unique_ptr<StoreSink> sink;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<service::TelemetryService> api;
  std::unique_ptr<service::ApiServer> server;
  std::unique_ptr<v1::Telemetry::Stub> stub;
};

World& TheWorld() {
  static World* world = new World();  // lives for the whole run
  return *world;
}

void Deadline(grpc::ClientContext& ctx, int ms) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

template <typename Req>
bool Decode(const uint8_t* data, size_t size, Req& req) {
  return req.ParseFromArray(data, static_cast<int>(size));
}

template <typename Req, typename Resp>
void Unary(grpc::Status (v1::Telemetry::Stub::*call)(grpc::ClientContext*, const Req&, Resp*),
           const uint8_t* data, size_t size) {
  Req req;
  if (!Decode(data, size, req)) return;
  grpc::ClientContext ctx;
  Deadline(ctx, 5000);
  Resp resp;
  grpc::Status s = (TheWorld().stub.get()->*call)(&ctx, req, &resp);
  // A handler that ran out of time would hide a hang: fail loudly.
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) std::abort();
}

template <typename Req, typename Item>
void Stream(std::unique_ptr<grpc::ClientReader<Item>> (v1::Telemetry::Stub::*call)(
                grpc::ClientContext*, const Req&),
            const uint8_t* data, size_t size, int max_items, int deadline_ms) {
  Req req;
  if (!Decode(data, size, req)) return;
  grpc::ClientContext ctx;
  Deadline(ctx, deadline_ms);
  auto reader = (TheWorld().stub.get()->*call)(&ctx, req);
  Item item;
  int n = 0;
  while (n < max_items && reader->Read(&item)) ++n;
  if (n == max_items) ctx.TryCancel();
  (void)reader->Finish();
}

void ClientSide(const uint8_t* data, size_t size) {
  v1::Frame frame;
  if (Decode(data, size, frame)) {
    auto f = client::FrameFromProto(frame);
    if (f && f->values.size() > client::kMaxChannelId + 1) std::abort();
  }
  v1::DeviceInfo info;
  if (Decode(data, size, info)) (void)client::DeviceInfoFromProto(info);
  v1::Summary summary;
  if (Decode(data, size, summary)) (void)client::SummaryFromProto(summary);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0];
  ++data;
  --size;
  using S = v1::Telemetry::Stub;
  switch (which % 12) {
    case 0:
      Unary(&S::GetDeviceInfo, data, size);
      break;
    case 1:
      Unary(&S::GetLatest, data, size);
      break;
    case 2:
      Stream(&S::Watch, data, size, 2, 20);  // no new frames come: ends at the deadline
      break;
    case 3:
      Stream(&S::Query, data, size, 1000, 5000);
      break;
    case 4:
      Unary(&S::BeginWindow, data, size);
      break;
    case 5:
      Unary(&S::EndWindow, data, size);
      break;
    case 6:
      Unary(&S::ListWindows, data, size);
      break;
    case 7:
      Unary(&S::Summarize, data, size);
      break;
    case 8:
      Unary(&S::Boost, data, size);
      break;
    case 9:
      Unary(&S::ListProcesses, data, size);
      break;
    default:
      ClientSide(data, size);
      break;
  }
  return 0;
}
