// The client of edgemon-control (edgemon.v1.Control, proto/edgemon/v1/control.proto):
// the power mode, locked clocks and fan as leases, for `edgemon control` and
// `edgemon record --lock-clocks`.
//
//   auto c = edgemon::client::ControlClient::Connect(ControlTarget(flag));
//   auto lease = (*c)->LockClocks({});      // held while `lease` lives
//   ... run the benchmark ...
//   std::string how = (*lease)->End();      // released; the helper restored the clocks
//
// A held lease ends when End() is called, when the HeldLease is destroyed,
// or when this process dies (the helper sees the connection go): the helper
// then restores what the lease changed.
//
// Thread safety: a ControlClient may be used from any thread; a HeldLease's
// End() from one thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "client/edgemon_client.h"
#include "edgemon/addresses.h"
#include "edgemon/v1/control.grpc.pb.h"

namespace edgemon::client {

// The packaged helper's socket (include/edgemon/addresses.h).
using edgemon::kDefaultControlTarget;

// `flag` when given, else $EDGEMON_CONTROL, else kDefaultControlTarget.
std::string ControlTarget(const std::string& flag);

class HeldLease {
 public:
  ~HeldLease();
  HeldLease(const HeldLease&) = delete;
  HeldLease& operator=(const HeldLease&) = delete;

  const v1::Lease& lease() const { return lease_; }
  // True once the helper ended the lease by itself (duration, shutdown).
  bool ended() const { return ended_.load(); }
  // Releases the lease (the helper restores its changes) and returns the
  // helper's account of it ("lease ... ended: ...; restored"), or what failed.
  std::string End();

 private:
  friend class ControlClient;
  HeldLease() = default;
  v1::Control::Stub* stub_ = nullptr;
  std::chrono::milliseconds timeout_{30000};
  v1::Lease lease_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReader<v1::LeaseEvent>> reader_;
  std::thread reader_thread_;
  std::atomic<bool> ended_{false};
  std::mutex mu_;
  std::string end_message_;
  bool done_ = false;
};

class ControlClient {
 public:
  // "unix:/path" or "/path". No I/O until the first call.
  static Result<std::unique_ptr<ControlClient>> Connect(const std::string& target);

  Result<v1::ListModesResponse> ListModes();
  Result<v1::ControlState> GetState();
  Result<v1::ReleaseResponse> Release(const std::string& kind, const std::string& lease_id = "");

  // Changes: a held lease (options.detach false) or a detached one with a
  // duration (the returned HeldLease then only reports what was granted).
  Result<std::unique_ptr<HeldLease>> SetMode(int id, const v1::LeaseOptions& options);
  Result<std::unique_ptr<HeldLease>> LockClocks(const v1::LeaseOptions& options);
  Result<std::unique_ptr<HeldLease>> SetFan(const std::string& fan, int percent,
                                            const v1::LeaseOptions& options);

  const std::string& target() const { return target_; }

 private:
  template <typename Req>
  Result<std::unique_ptr<HeldLease>> Open(const Req& req,
                                          std::unique_ptr<grpc::ClientReader<v1::LeaseEvent>> (
                                              v1::Control::Stub::*call)(grpc::ClientContext*,
                                                                        const Req&));
  Status Explain(const grpc::Status& s) const;

  std::string target_, path_;
  std::unique_ptr<v1::Control::Stub> stub_;
};

}  // namespace edgemon::client
