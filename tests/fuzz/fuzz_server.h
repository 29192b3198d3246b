// The real daemon's parts for the fuzz targets that call the gRPC API: a
// fixture board (agx-orin) discovered through RootedSysFs, a RingStore on a
// temporary file, the sampler feeding it and the live hub, the
// TelemetryService behind a real server, and a stub on its in-process
// channel. Shared by api_fuzz and request_fuzz. Built once per run and never
// destroyed (libFuzzer exits without returning).
#pragma once

#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

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

namespace edgemon::testing {

struct FuzzServer {
  // `fill` stores the history before the server starts (default: three
  // sampled frames); the store is flushed after it.
  explicit FuzzServer(const std::string& name,
                      const std::function<void(FuzzServer&)>& fill = nullptr) {
    std::string tmpl = "/tmp/edgemon-" + name + "-fuzz.XXXXXX";
    dir = ::mkdtemp(tmpl.data());
    fs = std::make_unique<RootedSysFs>(Fixture("agx-orin"));
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
    if (fill) {
      fill(*this);
    } else {
      for (int i = 0; i < 3; ++i) sampler->TickOnce();
    }
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

}  // namespace edgemon::testing
