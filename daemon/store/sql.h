// A thin RAII layer over the SQLite C API for the ring store: a connection
// with a cache of prepared statements, and a statement guard that resets the
// statement (releasing its read snapshot) when it goes out of scope.
//
// Thread safety: a Conn and its statements belong to one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "edgemon/status.h"

namespace edgemon::store::sql {

class Conn {
 public:
  // Opens `path` with sqlite3_open_v2 `flags` (SQLITE_OPEN_NOMUTEX is added).
  static Result<std::unique_ptr<Conn>> Open(const std::string& path, int flags);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  sqlite3* db() const { return db_; }
  // Runs SQL that returns no rows we need (pragmas, DDL, BEGIN/COMMIT).
  Status Exec(const char* sql);
  // A cached prepared statement for `sql`, keyed by the SQL text: the same
  // text, from a literal or a temporary string, gets the same statement.
  sqlite3_stmt* Prepare(const char* sql, Status& error);
  // First column of the first row as an integer (pragmas, counts). Not
  // cached: `sql` may be a temporary string.
  Result<int64_t> QueryInt(const char* sql);
  Result<std::string> QueryText(const char* sql);
  // "what: <sqlite message> (<extended code>)".
  std::string Error(std::string_view what) const;
  // Extended code of the most recent call through this class that failed
  // (kept across a later ROLLBACK or finalize, unlike sqlite3_errcode).
  int failure_code() const { return failure_code_; }
  // SQLite's message for failure_code() as it was when the call failed.
  const std::string& failure_message() const { return failure_message_; }
  void set_failure_code(int code) {
    failure_code_ = code;
    failure_message_ = code == SQLITE_OK ? std::string() : std::string(sqlite3_errmsg(db_));
  }
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // Rows this connection's statements returned since the last call.
  uint64_t TakeRows() { return std::exchange(rows_, 0); }
  void CountRow() { ++rows_; }

 private:
  explicit Conn(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  int failure_code_ = SQLITE_OK;
  uint64_t rows_ = 0;
  std::string failure_message_;
  // Looked up by string_view without a copy (transparent hash and equality).
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, sqlite3_stmt*, TextHash, std::equal_to<>> cache_;
};

// Binds, steps and reads one cached statement; resets it on destruction.
class Stmt {
 public:
  Stmt(Conn& conn, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Whether Prepare succeeded; if not, status() says why.
  bool ok() const { return stmt_ != nullptr; }
  const Status& status() const { return status_; }

  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, std::string_view text);
  Stmt& BindBlob(int i, std::string_view blob);
  Stmt& Bind(int i, const std::optional<int64_t>& v);
  Stmt& BindNull(int i);
  // A REAL, or NULL when absent (named apart: an int argument must not pick it).
  Stmt& BindReal(int i, const std::optional<double>& v);

  // Steps once: true with a row, false when done or on error (check
  // status() / failed()).
  bool Step();
  // Runs to completion (INSERT/UPDATE/DELETE); returns the error if any.
  Status Run();
  bool failed() const { return !status_.ok(); }
  int rc() const { return rc_; }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::optional<int64_t> OptInt(int col) const;
  std::string Text(int col) const;
  std::string_view Blob(int col) const;  // valid until the next Step

 private:
  Conn& conn_;
  sqlite3_stmt* stmt_ = nullptr;
  const char* sql_;
  Status status_;
  int rc_ = SQLITE_OK;
};

}  // namespace edgemon::store::sql
