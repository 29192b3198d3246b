// OwnerLock: one edgemond per database, and the error that says who holds it.
#include "daemon/runtime/owner_lock.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>

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
    runtime::OwnerLock lock;
    char c = lock.Acquire(db, "the store " + db).ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    if (::read(done[0], &c, 1) < 0) ::_exit(2);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  runtime::OwnerLock second;
  Status refused = second.Acquire(db, "the store " + db);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "the store " + db + " is in use by pid " + std::to_string(child) +
                                   " (another edgemond?)");
  ASSERT_EQ(::write(done[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(second.Acquire(db, "the store " + db).ok());  // free once the holder is gone
}

TEST(OwnerLock, ALockFileThatCannotBeOpenedIsUnavailable) {
  testing::TempTree t;
  t.Write("/file", "not a directory");
  runtime::OwnerLock lock;
  Status s = lock.Acquire(t.Real("/file/edgemon.db"), "the store");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "cannot open the store: Not a directory");
}

// The lock is the file's own: a symlink or a hard link to a locked store is
// the same store (before, a lock file named after the path let a second
// daemon in through another name).
TEST(OwnerLock, EveryPathToTheStoreIsTheSameStore) {
  testing::TempTree t;
  const std::string db = t.root() + "/edgemon.db";
  runtime::OwnerLock first;
  ASSERT_TRUE(first.Acquire(db, "the store").ok());
  ASSERT_EQ(::symlink(db.c_str(), (t.root() + "/via-symlink.db").c_str()), 0);
  ASSERT_EQ(::link(db.c_str(), (t.root() + "/via-hardlink.db").c_str()), 0);
  for (const char* other : {"/via-symlink.db", "/via-hardlink.db", "/./edgemon.db"}) {
    runtime::OwnerLock second;
    Status s = second.Acquire(t.root() + other, "the store");
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << other;
    EXPECT_NE(s.message().find("is in use by pid " + std::to_string(::getpid())), std::string::npos)
        << s.message();
  }
  EXPECT_TRUE(first.Names(t.root() + "/via-hardlink.db"));
  EXPECT_NE(first.Identity(), 0u);
  EXPECT_FALSE(std::filesystem::exists(db + ".lock"));  // nothing beside it
}

// --db /dev/null (or a FIFO) is refused as what it is; nothing is created
// beside it.
TEST(OwnerLock, ADeviceOrFifoIsNotAStore) {
  runtime::OwnerLock lock;
  Status s = lock.Acquire("/dev/null", "the store /dev/null");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "the store /dev/null is not a regular file");
  EXPECT_FALSE(std::filesystem::exists("/dev/null.lock"));
  testing::TempTree t;
  ASSERT_EQ(::mkfifo((t.root() + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(lock.Acquire(t.root() + "/fifo", "the store").code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace edgemon
