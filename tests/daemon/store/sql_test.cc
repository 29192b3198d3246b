// The store's SQL layer on a real SQLite file: the prepared-statement cache
// is keyed by the SQL text, not by the address of the string holding it.
#include "daemon/store/sql.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/temp_tree.h"

namespace edgemon::store::sql {
namespace {

TEST(SqlConn, StatementCacheIsKeyedByTextNotAddress) {
  testing::TempTree t;
  auto conn = Conn::Open(t.root() + "/s.db", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  ASSERT_TRUE(conn.ok()) << conn.status().message();
  Conn& c = **conn;
  // One buffer, two statements: the second has the first's address.
  std::string sql = "SELECT 1";
  sql.reserve(64);
  const char* address = sql.c_str();
  {
    Stmt s(c, sql.c_str());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s.Step());
    EXPECT_EQ(s.Int(0), 1);
  }
  sql = "SELECT 2";
  ASSERT_EQ(sql.c_str(), address);
  {
    Stmt s(c, sql.c_str());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(s.Step());
    EXPECT_EQ(s.Int(0), 2);
  }
  // The same text from another buffer gets the cached statement.
  Status error;
  const std::string copy = "SELECT 1";
  EXPECT_EQ(c.Prepare(copy.c_str(), error), c.Prepare("SELECT 1", error));
  EXPECT_NE(c.Prepare("SELECT 1", error), c.Prepare("SELECT 2", error));
}

}  // namespace
}  // namespace edgemon::store::sql
