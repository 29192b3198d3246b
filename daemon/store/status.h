// Status and Result<T>: how the store reports errors. No exception escapes
// the store's public API; a failure is a Status whose message says what
// failed and why, in one line fit for a log or a gRPC INVALID_ARGUMENT /
// INTERNAL detail.
//
// Thread safety: plain value types.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace edgemon::store {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.ok_ = false;
    s.message_ = std::move(message);
    return s;
  }
  // The file is not a usable store (not SQLite, corrupt, foreign, written by
  // a newer schema, damaged while running): retrying cannot help.
  static Status BadStore(std::string message) {
    Status s = Error(std::move(message));
    s.bad_store_ = true;
    return s;
  }

  bool ok() const { return ok_; }
  bool bad_store() const { return bad_store_; }
  const std::string& message() const { return message_; }  // empty when ok
  // Prepends context: "open /x.db: " + message (bad_store() is kept).
  Status Context(const std::string& what) const {
    if (ok_) return *this;
    Status s = Error(what + ": " + message_);
    s.bad_store_ = bad_store_;
    return s;
  }

 private:
  bool ok_ = true;
  bool bad_store_ = false;
  std::string message_;
};

// A value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}       // NOLINT: implicit by design
  Result(Status error) : status_(std::move(error)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Error("internal: Result built from an ok Status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const std::string& error() const { return status_.message(); }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace edgemon::store
