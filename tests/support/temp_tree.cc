#include "tests/support/temp_tree.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace edgemon::testing {

TempTree::TempTree() {
  std::string tmpl = (fs::temp_directory_path() / "edgemon-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;
}

TempTree::~TempTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void TempTree::Write(std::string_view logical, std::string_view content) {
  fs::path p = Real(logical);
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

void TempTree::Link(std::string_view logical, std::string_view target) {
  fs::path p = Real(logical);
  fs::create_directories(p.parent_path());
  std::error_code ec;
  fs::remove(p, ec);
  fs::create_symlink(std::string(target), p);
}

void TempTree::LinkRelative(std::string_view logical, std::string_view target) {
  fs::path link(logical);
  Link(logical, fs::path(target).lexically_relative(link.parent_path()).string());
}

void TempTree::MakeDir(std::string_view logical) {
  fs::create_directories(Real(logical));
}

void TempTree::Remove(std::string_view logical) {
  std::error_code ec;
  fs::remove_all(Real(logical), ec);
}

void TempTree::Rename(std::string_view from, std::string_view to) {
  fs::rename(Real(from), Real(to));
}

void TempTree::CopyFrom(const std::string& dir) {
  fs::copy(dir, root_,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks |
               fs::copy_options::overwrite_existing);
}

std::string FixturesDir() {
  return EDGEMON_FIXTURES_DIR;
}
std::string Fixture(std::string_view name) {
  return FixturesDir() + "/" + std::string(name);
}

}  // namespace edgemon::testing
