#include "daemon/store/sql.h"

namespace edgemon::store::sql {

Result<std::unique_ptr<Conn>> Conn::Open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Status::Internal("cannot open " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Conn>(new Conn(db));
}

Conn::~Conn() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Conn::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  set_failure_code(sqlite3_extended_errcode(db_));
  std::string msg = err ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Status::Internal(std::string(sql).substr(0, 60) + ": " + msg + " (" +
                          std::to_string(sqlite3_extended_errcode(db_)) + ")");
}

sqlite3_stmt* Conn::Prepare(const char* sql, Status& error) {
  auto it = cache_.find(std::string_view(sql));
  if (it != cache_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    set_failure_code(sqlite3_extended_errcode(db_));
    error =
        Status::Internal(Error(std::string("prepare \"") + std::string(sql).substr(0, 60) + "\""));
    sqlite3_finalize(stmt);
    return nullptr;
  }
  cache_.emplace(sql, stmt);
  return stmt;
}

namespace {

// One-off statements (pragmas with values spliced in) are not cached: each
// would stay prepared, and in the cache, for the connection's life.
template <typename F>
auto QueryOne(Conn& c, const char* sql, F&& read) -> Result<decltype(read(nullptr))> {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(c.db(), sql, -1, &stmt, nullptr) != SQLITE_OK) {
    c.set_failure_code(sqlite3_extended_errcode(c.db()));
    sqlite3_finalize(stmt);
    return Status::Internal(c.Error(std::string("\"") + sql + "\""));
  }
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW) {
    if (rc != SQLITE_DONE) c.set_failure_code(sqlite3_extended_errcode(c.db()));
    Status err = Status::Internal(rc == SQLITE_DONE ? std::string("no row from ") + sql
                                                    : c.Error(std::string("\"") + sql + "\""));
    sqlite3_finalize(stmt);
    return err;
  }
  auto value = read(stmt);
  sqlite3_finalize(stmt);
  return value;
}

}  // namespace

Result<int64_t> Conn::QueryInt(const char* sql) {
  return QueryOne(*this, sql,
                  [](sqlite3_stmt* s) { return static_cast<int64_t>(sqlite3_column_int64(s, 0)); });
}

Result<std::string> Conn::QueryText(const char* sql) {
  return QueryOne(*this, sql, [](sqlite3_stmt* s) {
    auto* p = sqlite3_column_text(s, 0);
    return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
  });
}

std::string Conn::Error(std::string_view what) const {
  return std::string(what) + ": " + sqlite3_errmsg(db_) + " (" +
         std::to_string(sqlite3_extended_errcode(db_)) + ")";
}

Stmt::Stmt(Conn& conn, const char* sql) : conn_(conn), sql_(sql) {
  stmt_ = conn.Prepare(sql, status_);
}

Stmt::~Stmt() {
  if (stmt_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view text) {
  sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindBlob(int i, std::string_view blob) {
  // A zero-length blob must still be a blob, not NULL.
  sqlite3_bind_blob(stmt_, i, blob.empty() ? "" : blob.data(), static_cast<int>(blob.size()),
                    SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::Bind(int i, const std::optional<int64_t>& v) {
  if (v) return Bind(i, *v);
  return BindNull(i);
}
Stmt& Stmt::BindReal(int i, const std::optional<double>& v) {
  if (!v) return BindNull(i);
  sqlite3_bind_double(stmt_, i, *v);
  return *this;
}
Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

bool Stmt::Step() {
  if (!stmt_) return false;
  rc_ = sqlite3_step(stmt_);
  if (rc_ == SQLITE_ROW) {
    conn_.CountRow();
    return true;
  }
  if (rc_ != SQLITE_DONE) {
    conn_.set_failure_code(sqlite3_extended_errcode(conn_.db()));
    status_ =
        Status::Internal(conn_.Error(std::string("\"") + std::string(sql_).substr(0, 60) + "\""));
  }
  return false;
}

Status Stmt::Run() {
  if (!stmt_) return status_;
  while (Step()) {
  }
  return status_;
}

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::string Stmt::Text(int col) const {
  auto* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string_view Stmt::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

}  // namespace edgemon::store::sql
