// OwnerLock: one edgemond per database, and the error that says who holds it.
#include "daemon/owner_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

TEST(OwnerLock, ASecondProcessIsRefusedNamingTheHolder) {
  testing::TempTree t;
  const std::string db = t.root() + "/data/edgemon.db";
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the holder: locks, says so, waits to be let go
    OwnerLock lock;
    char c = lock.Acquire(db).ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    if (::read(done[0], &c, 1) < 0) ::_exit(2);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  OwnerLock second;
  Status refused = second.Acquire(db);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "the store " + db + " is in use by pid " + std::to_string(child) +
                                   " (another edgemond?); one daemon per database");
  ASSERT_EQ(::write(done[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(second.Acquire(db).ok());  // free once the holder is gone
}

TEST(OwnerLock, ALockFileThatCannotBeOpenedIsUnavailable) {
  testing::TempTree t;
  t.Write("/file", "not a directory");
  OwnerLock lock;
  Status s = lock.Acquire(t.Real("/file/edgemon.db"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "cannot open lock file " + t.Real("/file/edgemon.db.lock") + ": Not a directory");
}

}  // namespace
}  // namespace edgemon
