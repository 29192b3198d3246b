#include "edgemon/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

#include <fstream>

#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

TEST(SecretFile, TokenIsTheFirstLineWithoutSurroundingBlanks) {
  EXPECT_EQ(FirstLineTrimmed("s3cret-token\n"), "s3cret-token");
  EXPECT_EQ(FirstLineTrimmed(" \ts3cret token\r\nsecond line\n"), "s3cret token");
  EXPECT_EQ(FirstLineTrimmed("no newline"), "no newline");
  EXPECT_EQ(FirstLineTrimmed(" \t\r\nlater"), "");
  EXPECT_EQ(FirstLineTrimmed(""), "");
}

TEST(SecretFile, ReadsWholeFilesAndSaysWhenItCannot) {
  testing::TempTree tmp;
  const std::string path = tmp.root() + "/cert.pem";
  const std::string pem("-----BEGIN\nAB\0CD\n-----END\n", 26);
  std::ofstream(path, std::ios::binary) << pem;
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, pem);  // every line, and a NUL byte, kept
  EXPECT_FALSE(ReadWholeFile(tmp.root() + "/missing.pem").has_value());
}

TEST(SecretFile, OnlyBoundedRegularFilesAreRead) {
  // A FIFO would block the reader forever and /dev/zero never ends.
  testing::TempTree tmp;
  const std::string fifo = tmp.root() + "/token";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int err = 0;
  EXPECT_FALSE(ReadRegularFile(fifo, 1024, &err).has_value());
  EXPECT_EQ(err, EINVAL);
  EXPECT_FALSE(ReadWholeFile("/dev/zero").has_value());
  EXPECT_FALSE(ReadRegularFile(tmp.root(), 1024, &err).has_value());
  EXPECT_EQ(err, EINVAL);
  const std::string big = tmp.root() + "/big";
  std::ofstream(big) << std::string(2000, 'x');
  EXPECT_FALSE(ReadRegularFile(big, 1024, &err).has_value());
  EXPECT_EQ(err, EFBIG);
  EXPECT_EQ(ReadRegularFile(big, 2000, &err), std::string(2000, 'x'));
  EXPECT_EQ(err, 0);
  EXPECT_FALSE(ReadRegularFile(tmp.root() + "/missing", 1024, &err).has_value());
  EXPECT_EQ(err, ENOENT);
}

}  // namespace
}  // namespace edgemon
