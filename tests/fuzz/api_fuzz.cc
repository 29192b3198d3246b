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
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "tests/fuzz/fuzz_server.h"

namespace {

using namespace edgemon;

using World = testing::FuzzServer;

World& TheWorld() {
  static World* world = new World("api");  // lives for the whole run
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
    auto f = wire::FrameFromProto(frame);
    if (f && f->values.size() > wire::kMaxChannelId + 1) std::abort();
  }
  v1::DeviceInfo info;
  if (Decode(data, size, info)) (void)client::DeviceInfoFromProto(info);
  v1::Summary summary;
  if (Decode(data, size, summary)) (void)wire::SummaryFromProto(summary);
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
