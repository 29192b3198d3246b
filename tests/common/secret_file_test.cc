#include "edgemon/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

// A token file in a private directory of its own: tmp.root()/d/token, 0600.
std::string GoodToken(const testing::TempTree& tmp, std::string_view dir = "/d") {
  const std::string d = tmp.root() + std::string(dir);
  ::mkdir(d.c_str(), 0700);
  const std::string path = d + "/token";
  std::ofstream(path) << "  s3cret-token-0123456789 \nsecond line\n";
  ::chmod(path.c_str(), 0600);
  return path;
}

// The message of a refusal, checked to name the file.
std::string Refusal(const Result<std::string>& r, const std::string& path) {
  EXPECT_FALSE(r.ok()) << path << " was read";
  if (r.ok()) return {};
  EXPECT_NE(r.status().message().find("secret file " + path + ": "), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);  // one line
  return r.status().message();
}

TEST(SecretFile, APrivateRegularFileOfItsOwnerIsRead) {
  testing::TempTree tmp;
  const std::string path = GoodToken(tmp);
  auto text = ReadSecretFile(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "  s3cret-token-0123456789 \nsecond line\n");
  auto token = ReadTokenFile(path, 16);
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(*token, "s3cret-token-0123456789");
  EXPECT_NE(ReadTokenFile(path, 64).status().message().find("at least 64 bytes"),
            std::string::npos);
  // A relative path is walked from the working directory, like any other.
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(::chdir(tmp.root().c_str()), 0);
  auto relative = ReadTokenFile("d/../d/./token");
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_TRUE(relative.ok()) << relative.status().message();
  EXPECT_EQ(*relative, "s3cret-token-0123456789");
}

TEST(SecretFile, AFileOthersCanReadIsRefused) {
  testing::TempTree tmp;
  const std::string path = GoodToken(tmp);
  ::chmod(path.c_str(), 0640);
  EXPECT_NE(Refusal(ReadSecretFile(path), path).find("is open to group or others (mode 0640"),
            std::string::npos);
  EXPECT_EQ(ReadSecretFile(path).status().code(), StatusCode::kPermissionDenied);
  ::chmod(path.c_str(), 0604);
  EXPECT_NE(Refusal(ReadTokenFile(path), path).find("is open to group or others (mode 0604"),
            std::string::npos);
  ::chmod(path.c_str(), 0620);  // group-writable: someone else could have written it
  Refusal(ReadSecretFile(path), path);
}

TEST(SecretFile, AFileOfAnotherUserIsRefused) {
  testing::TempTree tmp;
  const std::string path = GoodToken(tmp);
  // As root (CI): the file given to another uid. Otherwise: read on behalf
  // of another uid, so the caller's own file is the foreign one.
  Result<std::string> got = std::string();
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path.c_str(), 4242, 4242), 0);
    got = ReadSecretFile(path);
  } else {
    got = ReadSecretFile(path, kMaxSecretBytes, ::geteuid() + 1);
  }
  EXPECT_NE(Refusal(got, path).find("belongs to uid "), std::string::npos);
  EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied);
  // Root's files are always trusted: read on behalf of another uid.
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
    ASSERT_EQ(::chown((tmp.root() + "/d").c_str(), 4242, 4242), 0);
    auto as_user = ReadSecretFile(path, kMaxSecretBytes, 4242);
    EXPECT_TRUE(as_user.ok()) << as_user.status().message();
  }
}

TEST(SecretFile, ALinkIsNeverTheFile) {
  testing::TempTree tmp;
  const std::string real = GoodToken(tmp);
  const std::string link = tmp.root() + "/d/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto got = ReadSecretFile(link);
  EXPECT_NE(Refusal(got, link).find("is a symbolic link"), std::string::npos);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  // A link to a directory, in a directory only its owner can write, is
  // followed: the directories it leads through are checked the same way.
  const std::string dir_link = tmp.root() + "/dl";
  ASSERT_EQ(::symlink((tmp.root() + "/d").c_str(), dir_link.c_str()), 0);
  auto through = ReadTokenFile(dir_link + "/token");
  ASSERT_TRUE(through.ok()) << through.status().message();
  EXPECT_EQ(*through, "s3cret-token-0123456789");
}

TEST(SecretFile, ADirectoryOthersCanWriteIsRefusedUnlessSticky) {
  testing::TempTree tmp;
  const std::string path = GoodToken(tmp, "/open");
  const std::string dir = tmp.root() + "/open";
  ::chmod(dir.c_str(), 0777);
  auto got = ReadSecretFile(path);
  EXPECT_NE(Refusal(got, path).find("directory " + dir + " is writable by group or others"),
            std::string::npos);
  ::chmod(dir.c_str(), 0770);
  Refusal(ReadSecretFile(path), path);
  // A link in such a directory could be changed by anyone: the walk stops at
  // the directory before following it.
  ::chmod(dir.c_str(), 0777);
  const std::string real = GoodToken(tmp);
  const std::string link = dir + "/to-d";
  ASSERT_EQ(::symlink((tmp.root() + "/d").c_str(), link.c_str()), 0);
  Refusal(ReadSecretFile(link + "/token"), link + "/token");
  // Sticky, as /tmp: no one else can rename or remove what is ours in it.
  ::chmod(dir.c_str(), 01777);
  auto sticky = ReadSecretFile(path);
  EXPECT_TRUE(sticky.ok()) << sticky.status().message();
  EXPECT_TRUE(ReadSecretFile(link + "/token").ok());
  (void)real;
}

TEST(SecretFile, OnlyABoundedRegularFileIsASecret) {
  testing::TempTree tmp;
  GoodToken(tmp);
  const std::string fifo = tmp.root() + "/d/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = ReadSecretFile(fifo);  // at once: a FIFO is never waited on
  EXPECT_NE(Refusal(got, fifo).find("is not a regular file"), std::string::npos);
  const std::string dir = tmp.root() + "/d";
  EXPECT_NE(Refusal(ReadSecretFile(dir), dir).find("is not a regular file"), std::string::npos);
  const std::string big = tmp.root() + "/d/big";
  std::ofstream(big) << std::string(kMaxSecretBytes + 1, 'x');
  ::chmod(big.c_str(), 0600);
  EXPECT_NE(Refusal(ReadSecretFile(big), big).find("is larger than 65536 bytes"),
            std::string::npos);
  EXPECT_TRUE(ReadSecretFile(big, kMaxSecretBytes + 1).ok());
  const std::string missing = tmp.root() + "/d/missing";
  EXPECT_EQ(ReadSecretFile(missing).status().code(), StatusCode::kNotFound);
  const std::string empty = tmp.root() + "/d/empty";
  std::ofstream(empty) << " \n";
  ::chmod(empty.c_str(), 0600);
  EXPECT_NE(ReadTokenFile(empty).status().message().find("is empty"), std::string::npos);
}

}  // namespace
}  // namespace edgemon
