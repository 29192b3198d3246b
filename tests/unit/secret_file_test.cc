#include "edgemon/secret_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_tree.h"

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

}  // namespace
}  // namespace edgemon
