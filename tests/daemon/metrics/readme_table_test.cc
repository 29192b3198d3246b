// The documented metric table ("## Metrics" in docs/prometheus.md)
// against real expositions: every fixture board's inventory from the real
// collectors, rendered with every health field present. Each exported family
// must be documented, each documented name must be exported by some board,
// and the labels a row lists must be exactly the labels its families carry.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "daemon/metrics/exposition.h"
#include "tests/support/temp_tree.h"

namespace edgemon::metrics {
namespace {

struct Row {
  std::string cell;                // the metric column as written
  std::vector<std::regex> names;   // one pattern per documented name
  std::vector<std::string> shown;  // the names, for messages
  std::set<std::string> labels;    // every label the row lists
  std::set<std::string> seen;      // labels found on its families
  bool matched = false;
};

// "edgemon_memory_{total,used}_bytes" -> both names.
std::vector<std::string> ExpandBraces(const std::string& s) {
  size_t open = s.find('{');
  if (open == std::string::npos) return {s};
  size_t close = s.find('}', open);
  std::vector<std::string> out;
  std::stringstream alts(s.substr(open + 1, close - open - 1));
  std::string alt;
  while (std::getline(alts, alt, ',')) {
    for (auto& rest : ExpandBraces(s.substr(close + 1)))
      out.push_back(s.substr(0, open) + alt + rest);
  }
  return out;
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

std::vector<Row> ReadmeRows() {
  std::ifstream in(EDGEMON_README);
  EXPECT_TRUE(in) << EDGEMON_README;
  std::string line;
  bool in_section = false;
  std::vector<Row> rows;
  const std::regex code("`([^`]*)`");
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0)
      in_section = line.substr(line.find_first_not_of('#')) == " Metrics";
    if (!in_section || line.rfind("| `edgemon_", 0) != 0) continue;
    auto cells = Cells(line);
    if (cells.size() < 3) continue;
    Row row;
    row.cell = cells[0];
    std::string prefix;  // "edgemon_<kind>" of the last full name
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), code), end; it != end; ++it) {
      std::string name = (*it)[1];
      // "edgemon_read_errors_total{channel}": a label listed on the name.
      if (size_t brace = name.find('{'); brace != std::string::npos && name.back() == '}' &&
                                         name.find(',', brace) == std::string::npos) {
        row.labels.insert(name.substr(brace + 1, name.size() - brace - 2));
        name.resize(brace);
      }
      if (name.rfind("edgemon_", 0) == 0) {
        prefix = name.substr(0, name.find('_', 8));
      } else if (name.rfind('_', 0) == 0) {
        name = prefix + name;
      } else {
        continue;  // a value in the text, not a name
      }
      for (const auto& n : ExpandBraces(name)) {
        row.shown.push_back(n);
        row.names.emplace_back(std::regex_replace(n, std::regex(R"(\*)"), "[a-z0-9_]+"));
      }
    }
    // Labels: "rail, device, input, parent", "gpu / emc / devfreq, device",
    // "cpu (`cpu` = all cores)", "same" (as the row above).
    std::string labels = std::regex_replace(cells[1], std::regex(R"(\([^)]*\))"), "");
    if (labels.find("same") != std::string::npos && !rows.empty()) {
      row.labels = rows.back().labels;
    } else {
      const std::regex word("[a-z_][a-z0-9_]*");
      for (std::sregex_iterator it(labels.begin(), labels.end(), word), end; it != end; ++it) {
        row.labels.insert(it->str());
      }
    }
    rows.push_back(std::move(row));
  }
  EXPECT_GT(rows.size(), 8u) << "the README's metric table was not found";
  return rows;
}

// Family name (counters without _total, as Prometheus shows them in TYPE
// lines, are matched with _total too) -> the label names on its samples.
void Families(const std::string& text, std::map<std::string, std::set<std::string>>& out) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t end = line.find_first_of("{ ");
    std::string name = line.substr(0, end);
    auto& labels = out[name];
    if (line[end] != '{') continue;
    const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)=\"(?:[^\"\\]|\\.)*\")");
    std::string inside = line.substr(end, line.find("} ") - end);
    for (std::sregex_iterator it(inside.begin(), inside.end(), label), e; it != e; ++it) {
      labels.insert((*it)[1]);
    }
  }
}

TEST(ReadmeMetricTable, AgreesWithTheExpositionOfEveryFixtureBoard) {
  auto rows = ReadmeRows();
  std::map<std::string, std::set<std::string>> families;
  for (const char* board : {"agx-orin", "orin-nano", "agx-orin-r39", "agx-thor-r38", "xavier-nx",
                            "tx2", "jetson-nano", "x86-laptop", "no-sensors"}) {
    RootedSysFs fs(testing::Fixture(board));
    CollectOptions options;
    Collection c(fs, MakeDefaultCollectors(options), options, nullptr);
    c.Discover();
    // Every channel present: which families exist depends on the inventory
    // alone, not on which values this fixture happens to hold.
    Frame f;
    f.values.assign(c.inventory().channels.size(), int64_t{1});
    f.realtime_ns = 1'700'000'000'000'000'000;
    std::vector<uint64_t> errors(c.inventory().channels.size(), 1);
    Health h;
    h.version = "1";
    h.frames = 2;
    h.energy_samples = 20;
    h.deadline_misses = 0;
    h.frame_period_ns = 1'000'000'000;
    h.energy_period_ns = 10'000'000;
    h.read_errors = errors;
    h.store = StoreHealth{.bytes = 1, .max_bytes = 2, .frames = 2};
    h.control = ControlHealth{.changes = 3, .leases = 1};
    const ProcessGpuMemory gpu[] = {{.pid = 4242, .process = "bench", .kib = 1024}};
    h.gpu_processes = gpu;
    Families(RenderExposition(c.inventory(), &f, h, Format::kPrometheus), families);
  }
  {
    // No fixture tree has a devfreq device other than the GPU: one like
    // AGX Orin's VIC, as the devfreq collector declares it.
    Inventory inv;
    Frame f;
    for (Field field : {Field::kFreq, Field::kLoad}) {
      Channel ch;
      ch.id = static_cast<ChannelId>(inv.channels.size());
      ch.kind = Kind::kDevfreq;
      ch.name = "15340000.vic";
      ch.field = field;
      ch.unit = UnitOf(field);
      ch.device = "devfreq 15340000.vic";
      inv.channels.push_back(ch);
      f.values.push_back(int64_t{1});
    }
    Families(RenderExposition(inv, &f, Health{}, Format::kPrometheus), families);
  }
  ASSERT_GT(families.size(), 20u);

  for (const auto& [name, labels] : families) {
    Row* row = nullptr;
    for (auto& r : rows) {
      for (const auto& re : r.names) {
        if (std::regex_match(name, re)) row = &r;
      }
    }
    if (row == nullptr) {
      ADD_FAILURE() << name << " is exported but not in the README's metric table";
      continue;
    }
    row->matched = true;
    row->seen.insert(labels.begin(), labels.end());
  }
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.names.size(); ++i) {
      bool found = false;
      for (const auto& [name, labels] : families)
        found = found || std::regex_match(name, r.names[i]);
      EXPECT_TRUE(found) << r.shown[i]
                         << " is in the README's metric table but no board exports it";
    }
    if (!r.matched) continue;
    for (const auto& l : r.labels) {
      EXPECT_TRUE(r.seen.count(l))
          << "README lists label " << l << " on " << r.cell << " but the exposition has none";
    }
    for (const auto& l : r.seen) {
      EXPECT_TRUE(r.labels.count(l)) << "the exposition has label " << l << " on " << r.cell
                                     << " but the README does not list it";
    }
  }
}

}  // namespace
}  // namespace edgemon::metrics
