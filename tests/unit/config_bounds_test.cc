// The documented bounds of the configuration, at the boundary: the store's
// max_size up to 1 TiB (README), and a monitored root that must exist.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/config.h"

namespace edgemon {
namespace {

// The error of a config whose [store] max_size is `value` ("" when accepted).
std::string MaxSizeError(const std::string& value, int64_t* bytes = nullptr) {
  Config c;
  Status s = ApplyToml("[store]\nmax_size = " + value + "\n", "edgemond.toml", c);
  if (s.ok()) s = Validate(c);
  if (bytes != nullptr) *bytes = c.max_db_bytes;
  return s.message();
}

TEST(ConfigBounds, MaxSizeAcceptsTheDocumentedMaximumOf1TiB) {
  int64_t bytes = 0;
  EXPECT_EQ(MaxSizeError("\"1TiB\"", &bytes), "");
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("\"1024GiB\"", &bytes), "");
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("1099511627776", &bytes), "");  // a bare integer is bytes
  EXPECT_EQ(bytes, int64_t{1} << 40);
  EXPECT_EQ(MaxSizeError("\"1TB\"", &bytes), "");  // 10^12 bytes, under 1 TiB
  EXPECT_EQ(bytes, int64_t{1'000'000'000'000});
  EXPECT_EQ(ParseBytes("1TiB"), int64_t{1} << 40);
}

TEST(ConfigBounds, MaxSizeRefusesOneByteMoreThan1TiB) {
  for (const char* over : {"1099511627777", "\"1099511627777B\"", "\"2TiB\"", "\"1025GiB\""}) {
    EXPECT_EQ(MaxSizeError(over), "key store.max_size: must be between 1MiB and 1TiB") << over;
  }
  EXPECT_FALSE(ParseBytes("9999999TiB"));  // overflows int64: refused, not wrapped
}

TEST(ConfigBounds, AMissingRootIsRefusedWithOneLine) {
  const std::string dir = ::testing::TempDir() + "edgemon_root_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  Config c;
  c.root = dir;
  EXPECT_EQ(Validate(c).message(), "key daemon.root: " + dir + ": no such directory");
  EXPECT_EQ(CheckRootDirectory(dir, "--root").message(), "--root " + dir + ": no such directory");

  std::ofstream(dir) << "a file\n";
  EXPECT_EQ(CheckRootDirectory(dir, "--root").message(), "--root " + dir + ": not a directory");
  std::filesystem::remove(dir);

  std::filesystem::create_directory(dir);
  EXPECT_EQ(Validate(c).message(), "");
  EXPECT_TRUE(CheckRootDirectory(dir, "--root").ok());
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace edgemon
