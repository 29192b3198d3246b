// The unix-socket helpers every serving program shares: a live socket is
// never replaced, a stale one is, a file that is no socket is refused.
#include "daemon/runtime/sockets.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "tests/support/temp_tree.h"

namespace edgemon::runtime {
namespace {

int BindUnix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  return fd;
}

TEST(Sockets, ALiveSocketIsNeverReplacedAStaleOneIs) {
  testing::TempTree t;
  const std::string path = t.root() + "/edgemond.sock";
  int fd = BindUnix(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  Status live = ClaimUnixPath(path);
  EXPECT_EQ(live.code(), StatusCode::kAlreadyExists) << live.ToString();
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0);
  ::close(fd);  // nobody listens now: the file is stale
  EXPECT_TRUE(ClaimUnixPath(path).ok());
  EXPECT_NE(::lstat(path.c_str(), &st), 0);
}

TEST(Sockets, AFileThatIsNoSocketIsRefused) {
  testing::TempTree t;
  const std::string path = t.root() + "/edgemond.sock";
  std::ofstream(path) << "not a socket";
  Status s = ClaimUnixPath(path);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("not a socket"), std::string::npos) << s.message();
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0);  // left in place
}

TEST(Sockets, TheDirectoryIsMadeReadableToTheGroupWhateverTheUmask) {
  testing::TempTree t;
  const std::string dir = t.root() + "/run/edgemon";
  mode_t old = ::umask(077);
  Status s = MakeSocketDirectory(dir + "/edgemond.sock");
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST(Sockets, LoopbackIsJudgedByAddress) {
  EXPECT_TRUE(IsLoopback("127.0.0.1:7070"));
  EXPECT_TRUE(IsLoopback("[::1]:7070"));
  EXPECT_FALSE(IsLoopback("127.0.0.1.example.test:7070"));
  EXPECT_FALSE(IsLoopback("[::]:7070"));
}

}  // namespace
}  // namespace edgemon::runtime
