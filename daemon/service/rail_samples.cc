// ReadRailSamples: the rail samples kept at a boosted rate
// (store/rail_samples.h), by window or time range, in pages.
#include <algorithm>
#include <limits>

#include "daemon/service/codec.h"
#include "daemon/service/service.h"
#include "daemon/summary/summarize.h"
#include "edgemon/checked.h"
#include "proto/grpc_status.h"

namespace edgemon::service {

grpc::ServerUnaryReactor* TelemetryService::ReadRailSamples(grpc::CallbackServerContext* ctx,
                                                            const v1::ReadRailSamplesRequest* req,
                                                            v1::RailSamples* resp) {
  auto done = [ctx](const Status& s) {
    auto* r = ctx->DefaultReactor();
    r->Finish(wire::ToGrpc(s));
    return r;
  };
  if (req->limit() > store::kMaxRailSamplesPerRead) {
    return done(
        Status::InvalidArgument("limit: at most " + std::to_string(store::kMaxRailSamplesPerRead)));
  }
  if (req->window_id() < 0) return done(Status::InvalidArgument("window_id: must not be negative"));
  if (req->window_id() == 0 && req->from_ns() >= req->to_ns()) {
    return done(Status::InvalidArgument("from_ns must be before to_ns"));
  }
  const size_t limit = req->limit() == 0 ? store::kMaxRailSamplesPerRead : req->limit();
  const int64_t window = req->window_id();
  const int64_t req_from = req->from_ns(), req_to = req->to_ns();
  return Defer(ctx, [this, window, req_from, req_to, limit, resp]() -> Status {
    int64_t from = req_from, to = req_to;
    if (window != 0) {
      auto w = store_.GetWindow(window);
      if (!w.ok()) return summary::StoreFailure(store_, "window: " + w.status().message());
      if (!*w) return Status::NotFound("no window " + std::to_string(window));
      const int64_t start = (*w)->start_ns;
      // A page of a window starts where the caller continues.
      from = req_from > start ? req_from : start;
      // The end sample itself belongs to the window (a closed range).
      to = AddSaturating((*w)->end_ns.value_or(Now()), 1);
      if (from >= to) return Status::InvalidArgument("from_ns lies after the window's end");
    }
    // What the sampler has handed over so far is in the store once the
    // writer's queue up to here is (a Flush).
    const int64_t through = sampler_ != nullptr ? sampler_->rail_captured_through_ns() : Now();
    if (Status f = store_.Flush(); !f.ok()) {
      return summary::StoreFailure(store_, "rail samples: " + f.message());
    }
    auto got = store_.RailSamplesBetween(from, to, limit);
    if (!got.ok()) return summary::StoreFailure(store_, "rail samples: " + got.status().message());
    resp->set_from_ns(from);
    resp->set_to_ns(to);
    resp->set_complete_to_ns(through);
    resp->mutable_t_ns()->Assign(got->t_ns.begin(), got->t_ns.end());
    for (size_t c = 0; c < got->keys.size(); ++c) {
      v1::RailColumn* col = resp->add_rails();
      col->set_key(got->keys[c]);
      const auto& values = got->values[c];
      col->mutable_values()->Reserve(static_cast<int>(values.size()));
      for (size_t i = 0; i < values.size(); ++i) {
        col->add_values(values[i].value_or(0));
        if (!values[i]) col->add_absent(static_cast<uint32_t>(i));
      }
    }
    if (got->truncated && !got->t_ns.empty()) {
      resp->set_next_from_ns(AddSaturating(got->t_ns.back(), 1));
    }
    return Status::Ok();
  });
}

}  // namespace edgemon::service
