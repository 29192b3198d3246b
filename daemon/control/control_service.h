// edgemon.v1.Control: leases over BoardControl's changes, their state file,
// and the gRPC service of edgemon-control (proto/edgemon/v1/control.proto).
//
// Leases: one per kind (mode, clocks, fan). A grant is planned, persisted
// (the state file lists every live lease with what restores it), then
// applied; a failed application is rolled back and removed from the state.
// A lease ends only by its holder (Release by its uid, or its stream
// cancelled: the client went away), by root (Release by uid 0), by its
// duration passing, or at shutdown; its changes are then restored and it
// leaves the state file. Restores are exact only newest first, so the leases
// granted after it end first; but a lease of another uid is never ended by
// that: while a newer lease of another uid holds on, the older lease only
// records that it is to end, and ends (restoring) right after the last such
// lease ends. Root's Release ends the newer leases of every uid. A helper
// that starts and finds leases in the state file (its predecessor was
// killed) restores them, newest first.
//
// Untrusted text (a fan name, a caller's comm) is logged escaped
// (edgemon::TerminalSafe, newlines too) and cut to a bound.
//
// Callers: the listener records each connection's SO_PEERCRED by the
// connection's fd; the service finds it from the call's peer ("fd:N").
//
// Errors are edgemon::Status inside; each RPC converts its outcome to a
// grpc::Status where it returns (proto/grpc_status.h).
//
// Thread safety: every method may be called from any thread; board changes
// are serialised by one mutex.
#pragma once

#include <spdlog/logger.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/control/board.h"
#include "daemon/runtime/peers.h"
#include "edgemon/v1/control.grpc.pb.h"

namespace edgemon::control {

struct Caller {
  uid_t uid = 0;
  pid_t pid = 0;
  gid_t gid = 0;
  std::string comm;  // /proc/PID/comm, for the log
  bool allowed = false;
  std::string refusal;  // why not, when !allowed
};

// Caller credentials by connection, filled by the accept loop (peers.h).
using CallerTable = runtime::ByConnection<Caller>;

class ControlService final : public edgemon::v1::Control::Service {
 public:
  ControlService(BoardControl& board, std::string state_path, const CallerTable& callers,
                 std::shared_ptr<spdlog::logger> log);
  ~ControlService() override;

  // Restores the leases a previous run left in the state file.
  void RecoverFromState();
  // Ends every lease (restoring its changes) and stops the expiry thread.
  void Shutdown();

  grpc::Status ListModes(grpc::ServerContext*, const v1::ListModesRequest*,
                         v1::ListModesResponse*) override;
  grpc::Status GetState(grpc::ServerContext*, const v1::GetStateRequest*,
                        v1::ControlState*) override;
  grpc::Status SetMode(grpc::ServerContext*, const v1::SetModeRequest*,
                       grpc::ServerWriter<v1::LeaseEvent>*) override;
  grpc::Status LockClocks(grpc::ServerContext*, const v1::LockClocksRequest*,
                          grpc::ServerWriter<v1::LeaseEvent>*) override;
  grpc::Status SetFan(grpc::ServerContext*, const v1::SetFanRequest*,
                      grpc::ServerWriter<v1::LeaseEvent>*) override;
  grpc::Status Release(grpc::ServerContext*, const v1::ReleaseRequest*,
                       v1::ReleaseResponse*) override;

 private:
  struct LeaseRec {
    v1::Lease info;
    nlohmann::json plan;
    uint64_t seq = 0;
    std::string ending;    // why, once asked to end while newer leases of others hold
    bool watched = false;  // a Hold() waits to tell its client how it ended
  };
  edgemon::Status Who(grpc::ServerContext* ctx, Caller* who) const;
  // Plans, persists and applies; on success the lease id in *id.
  edgemon::Status Grant(
      const Caller& who, const std::string& kind, const std::string& detail,
      const v1::LeaseOptions& options,
      const std::function<edgemon::Status(const std::string& id, nlohmann::json*)>& plan,
      v1::Lease* granted);
  // Holds a granted lease for the stream's life (or returns at once when detached).
  edgemon::Status Hold(grpc::ServerContext* ctx, grpc::ServerWriter<v1::LeaseEvent>* writer,
                       const v1::Lease& lease);
  // Ends the lease of `kind` (mu_ held): at once, with the newer leases,
  // when those are all its holder's or `as_root` (Release by uid 0); else it
  // is marked to end after them. Then ends the marked leases that nothing newer holds any
  // more. Returns the message.
  std::string EndLeaseLocked(const std::string& kind, const std::string& why, bool as_root);
  // Ends a lease and every newer one (mu_ held): restores, removes, persists,
  // logs. Returns the message.
  std::string EndLocked(const std::string& kind, const std::string& why);
  // The newest lease newer than `rec` held by another uid, or nullptr.
  const LeaseRec* NewerOfOthersLocked(const LeaseRec& rec) const;
  // Writes the state file (atomically); an error says what failed.
  edgemon::Status SaveStateLocked();
  void ExpiryLoop();

  BoardControl& board_;
  std::string state_path_;
  ConfinedRoot state_dir_;  // the directory of state_path_
  const CallerTable& callers_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, LeaseRec> leases_;    // by kind
  std::map<std::string, std::string> ended_;  // lease id -> how it ended
  uint64_t next_seq_ = 1;
  std::atomic<uint64_t> changes_{0};
  bool stopping_ = false;
  std::thread expiry_;
};

}  // namespace edgemon::control
