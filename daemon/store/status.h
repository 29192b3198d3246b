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

  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }  // empty when ok
  // Prepends context: "open /x.db: " + message.
  Status Context(const std::string& what) const {
    return ok_ ? *this : Error(what + ": " + message_);
  }

 private:
  bool ok_ = true;
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
