// The live page's JSON and parameter checks (daemon/web/live_json.h), and its
// routes on a real listener and store (daemon/web/live_site.h): the page and
// its script, the event stream (hello, frames, its bound, Stop with streams
// open), the history and energy endpoints' answers to bad parameters, and
// the listener's token on every route.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daemon/metrics/listener.h"
#include "daemon/store/ring_store.h"
#include "daemon/web/live_json.h"
#include "daemon/web/live_site.h"
#include "edgemon/checked.h"
#include "edgemon/clock.h"
#include "tests/support/inventory.h"
#include "tests/support/temp_tree.h"

namespace edgemon::web {
namespace {

using edgemon::testing::AddChannel;
using edgemon::testing::TempTree;
using nlohmann::json;

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kSec;

// A board with an input rail, two sub-rails and a temperature.
Inventory Board() {
  Inventory inv;
  inv.board.model = "Test Board";
  inv.board.nvpmodel = "MAXN";
  AddChannel(inv, Kind::kRail, "VDD_SOC", Field::kPower).parent = "VDD_IN";
  Channel& in = AddChannel(inv, Kind::kRail, "VDD_IN", Field::kPower);
  in.flags = kFlagInputRail;
  AddChannel(inv, Kind::kRail, "VDD_CPU", Field::kPower).parent = "VDD_IN";
  AddChannel(inv, Kind::kThermal, "cpu-thermal", Field::kTemp);
  for (auto& c : inv.channels) c.unit = UnitOf(c.field);
  return inv;
}

Frame MakeFrame(uint64_t seq, int64_t t_ns, std::vector<Value> values) {
  Frame f;
  f.seq = seq;
  f.realtime_ns = t_ns;
  f.boottime_ns = t_ns - kNow + kSec;
  f.values = std::move(values);
  return f;
}

// ---- JSON ----

TEST(LiveJsonTest, FrameCarriesNullForMissingValuesAndMilliseconds) {
  json j = FrameJson(MakeFrame(7, kNow + 123'456'789, {1500, std::nullopt, 0, 45000}));
  EXPECT_EQ(j["seq"], 7);
  EXPECT_EQ(j["t"], 1'700'000'000'123);
  ASSERT_EQ(j["v"].size(), 4u);
  EXPECT_EQ(j["v"][0], 1500);
  EXPECT_TRUE(j["v"][1].is_null());  // missing: null, never 0
  EXPECT_EQ(j["v"][2], 0);           // a measured 0 stays 0
}

TEST(LiveJsonTest, HelloListsTheRailTreeInputFirstSubRailsBelow) {
  Inventory inv = Board();
  json j = HelloJson(inv, MakeFrame(1, kNow, {1, 2, 3, 4}), 5, 250'000'000);
  EXPECT_EQ(j["board"]["model"], "Test Board");
  EXPECT_EQ(j["generation"], 5);
  EXPECT_EQ(j["period_ms"], 250);
  ASSERT_EQ(j["channels"].size(), 4u);
  EXPECT_FALSE(j.contains("values"));
  json tree = j["rail_tree"];
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree[0]["name"], "VDD_IN");
  EXPECT_EQ(tree[0]["depth"], 0);
  EXPECT_EQ(tree[0]["input"], true);
  EXPECT_EQ(tree[1]["name"], "VDD_SOC");
  EXPECT_EQ(tree[1]["depth"], 1);
  EXPECT_EQ(tree[2]["name"], "VDD_CPU");
  EXPECT_EQ(tree[2]["depth"], 1);
}

TEST(LiveJsonTest, AnEventIsOneDataLineWhateverTheLabelHolds) {
  Window w;
  w.id = 3;
  w.label = "two\nlines\r\n\ndata: forged";
  w.start_ns = kNow;
  std::string e = SseEvent("window", WindowJson(w));
  EXPECT_EQ(e.rfind("event: window\ndata: {", 0), 0u);
  EXPECT_EQ(e.find('\n', std::string("event: window\n").size()), e.size() - 2);
  EXPECT_EQ(e.substr(e.size() - 2), "\n\n");
  json back = json::parse(e.substr(e.find("data: ") + 6));
  EXPECT_EQ(back["label"], w.label);
  EXPECT_TRUE(back["end"].is_null());
}

TEST(LiveJsonTest, EnergyIsInJoulesAndNullWhereUnknown) {
  Summary s;
  s.from_ns = kNow;
  s.to_ns = kNow + 2 * kSec;
  s.duration_s = 2;
  s.rails.push_back({"VDD_IN", "", true, 12000.0, 6000.0, 7000});
  s.rails.push_back({"VDD_SOC", "VDD_IN", false, std::nullopt, std::nullopt, std::nullopt});
  json j = EnergyJson(s, 4);
  EXPECT_EQ(j["window"], 4);
  EXPECT_DOUBLE_EQ(j["rails"][0]["energy_j"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(j["rails"][0]["peak_w"].get<double>(), 7.0);
  EXPECT_TRUE(j["rails"][1]["energy_j"].is_null());
  EXPECT_TRUE(j["rails"][1]["avg_w"].is_null());
  EXPECT_TRUE(j["rails"][1]["peak_w"].is_null());
}

// ---- Parameters ----

ParamFn Params(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

std::string Refusal(std::map<std::string, std::string> m) {
  auto r = ParseHistory(Params(std::move(m)), kNow, kSec, Board());
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(HistoryParamsTest, DefaultsToTheLastHourOfEveryRailsPower) {
  auto r = ParseHistory(Params({}), kNow, kSec, Board());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->range.to_ns, kNow);
  EXPECT_EQ(r->range.from_ns, kNow - 3600 * kSec);
  EXPECT_EQ(r->step_ns, 6001 * int64_t{1'000'000});  // about 600 steps, whole ms
  EXPECT_EQ(r->keys, (std::vector<std::string>{"rail/VDD_SOC/power", "rail/VDD_IN/power",
                                               "rail/VDD_CPU/power"}));
}

TEST(HistoryParamsTest, AShortRangeStepsNoFinerThanFrames) {
  auto r = ParseHistory(Params({{"from", "-10s"}}), kNow, kSec, Board());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->step_ns, kSec);
}

TEST(HistoryParamsTest, TakesTheOneTimeSyntaxAndChannelKeys) {
  auto r = ParseHistory(Params({{"from", "2023-11-14T22:13:00Z"},
                                {"to", "@1700000000"},
                                {"step", "10s"},
                                {"channels", "thermal/cpu-thermal/temp, rail/VDD_IN/power"}}),
                        kNow, kSec, Board());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->range.from_ns, 1699999980 * kSec);
  EXPECT_EQ(r->range.to_ns, kNow);
  EXPECT_EQ(r->step_ns, 10 * kSec);
  EXPECT_EQ(r->keys, (std::vector<std::string>{"thermal/cpu-thermal/temp", "rail/VDD_IN/power"}));
}

TEST(HistoryParamsTest, BadParametersAreRefusedWithTheirName) {
  EXPECT_NE(Refusal({{"from", "yesterday-ish"}}).find("from: "), std::string::npos);
  EXPECT_NE(Refusal({{"to", "2023-02-30"}}).find("to: "), std::string::npos);
  EXPECT_NE(Refusal({{"from", "now"}, {"to", "-1h"}}).find("from must be before to"),
            std::string::npos);
  EXPECT_NE(Refusal({{"from", "now"}, {"to", "now"}}).find("from must be before to"),
            std::string::npos);
  EXPECT_NE(Refusal({{"step", "1us"}}).find("step: at least 1ms"), std::string::npos);
  EXPECT_NE(Refusal({{"step", "-5s"}}).find("step: "), std::string::npos);
  EXPECT_NE(Refusal({{"step", "soon"}}).find("step: "), std::string::npos);
  EXPECT_NE(Refusal({{"from", "-30d"}, {"step", "1s"}}).find("more than 5000"), std::string::npos);
  EXPECT_NE(Refusal({{"channels", "rail/NOPE/power"}}).find("no channel rail/NOPE/power"),
            std::string::npos);
  EXPECT_NE(Refusal({{"channels", "rail/VDD_IN/power,rail/VDD_IN/power"}}).find("twice"),
            std::string::npos);
  EXPECT_NE(Refusal({{"channels", "rail/VDD_IN/power,,"}}).find("empty"), std::string::npos);
  // The widest times there are, and past them: an answer, never a crash.
  EXPECT_NE(
      Refusal({{"from", "1677-09-21T00:12:44Z"}, {"to", "2262-04-11T23:47:16Z"}, {"step", "1ms"}})
          .find("more than 5000"),
      std::string::npos);
  EXPECT_NE(Refusal({{"from", "-300000d"}}).find("from: "), std::string::npos);
}

// The size of an answer is capped as a whole (the request that once built
// 9 MB answers: 5000 steps of 64 channels), naming the cap.
TEST(HistoryParamsTest, PointsInAllAreCappedNamingTheCap) {
  Inventory inv = Board();
  for (int i = 0; inv.channels.size() < 64; ++i) {
    AddChannel(inv, Kind::kThermal, "zone" + std::to_string(i), Field::kTemp).unit =
        UnitOf(Field::kTemp);
  }
  auto keys = [&](size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + inv.channels[i].Key();
    return out;
  };
  auto ask = [&](size_t n) {
    return ParseHistory(Params({{"from", "-50s"}, {"step", "10ms"}, {"channels", keys(n)}}), kNow,
                        kSec, inv);
  };
  auto all = ask(64);
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(all.status().message().find("64 channels of 5000 steps make 320000 points, more "
                                        "than 40000 per request"),
            std::string::npos)
      << all.status().message();
  EXPECT_TRUE(ask(8).ok());  // 40000 points: the cap itself
  EXPECT_FALSE(ask(9).ok());
  EXPECT_TRUE(ParseHistory(Params({{"from", "-1h"}, {"step", "6s"}, {"channels", keys(64)}}), kNow,
                           kSec, inv)
                  .ok());  // 600 x 64
}

TEST(HistoryParamsTest, TheWidestRangeWithAStepThatFitsIsAccepted) {
  auto r = ParseHistory(Params({{"from", "1677-09-21T00:12:44Z"}, {"to", "2262-04-11T23:47:16Z"}}),
                        kNow, kSec, Board());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LE(BucketCount(r->range.from_ns, r->range.to_ns, r->step_ns), 5000u);
}

// ---- The routes ----

class LiveSiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inv_ = std::make_shared<Inventory>(Board());
    auto st = store::RingStore::Open(tmp_.root() + "/edgemon.db", {});
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    store_->SetInventory(*inv_);
    const int64_t t0 = SystemClock().RealtimeNs() - 30 * kSec;
    for (uint64_t i = 0; i < 20; ++i) {
      Publish(MakeFrame(i + 1, t0 + static_cast<int64_t>(i) * kSec,
                        {1000 + static_cast<int64_t>(i), std::nullopt, 2000, 45000}));
    }
    ASSERT_TRUE(store_->Flush().ok());
  }

  void TearDown() override {
    if (listener_) listener_->Stop();
  }

  void Publish(Frame f) {
    {
      std::lock_guard lk(mu_);
      frame_ = std::make_shared<Frame>(f);
    }
    store_->Append(f);
    if (site_) site_->OnFrame(*inv_, 1, f);
  }

  void Start(size_t max_streams = 16, std::string token = "") {
    LiveSite::Options o;
    o.latest = [this] {
      std::lock_guard lk(mu_);
      return Latest{inv_, 1, frame_};
    };
    o.max_streams = max_streams;
    site_ = std::make_unique<LiveSite>(*store_, o);
    listener_ = std::make_unique<metrics::MetricsListener>([](metrics::Format) { return "m 1\n"; });
    listener_->AddRoutes(site_->Routes());
    metrics::ListenerOptions lo;
    lo.bearer_token = std::move(token);
    ASSERT_TRUE(listener_->Start(lo).ok());
  }

  // A raw connection asking for the event stream; returns the socket.
  int OpenStream(const std::string& extra_headers = "") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(listener_->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    std::string req = "GET /api/live HTTP/1.1\r\nHost: x\r\n" + extra_headers + "\r\n";
    EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    return fd;
  }

  // Reads from `fd` until `what` has arrived or the server closed; the
  // limit only turns a hang into a failure (far past any wait here).
  static std::string ReadUntil(int fd, const std::string& what, std::string* got) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    char buf[4096];
    while (got->find(what) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return "closed";
      got->append(buf, static_cast<size_t>(n));
    }
    return got->find(what) != std::string::npos ? "found" : "timeout";
  }

  httplib::Client Client() { return httplib::Client("127.0.0.1", listener_->port()); }

  TempTree tmp_;
  std::shared_ptr<Inventory> inv_;
  std::unique_ptr<store::RingStore> store_;
  std::mutex mu_;
  std::shared_ptr<const Frame> frame_;
  std::unique_ptr<LiveSite> site_;
  std::unique_ptr<metrics::MetricsListener> listener_;
};

TEST_F(LiveSiteTest, ServesThePageAndItsScriptFromItself) {
  Start();
  auto c = Client();
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script src=\"live.js\"></script>"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("connect-src 'self'"),
            std::string::npos);
  auto js = c.Get("/live.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_NE(js->body.find("EventSource(\"api/live\""), std::string::npos);
  // No other host named anywhere.
  for (const std::string& body : {page->body, js->body}) {
    EXPECT_EQ(body.find("https://"), std::string::npos);
    EXPECT_EQ(body.find("http://") == std::string::npos ||
                  body.find("http://www.w3.org/2000/svg") == body.find("http://"),
              true);
  }
  EXPECT_EQ(c.Get("/metrics")->body, "m 1\n");
  EXPECT_EQ(c.Get("/nothing")->status, 404);
}

TEST_F(LiveSiteTest, TheStreamSaysHelloThenSendsEachNewFrame) {
  Start();
  int fd = OpenStream();
  std::string got;
  ASSERT_EQ(ReadUntil(fd, "event: frame", &got), "found");
  EXPECT_NE(got.find("text/event-stream"), std::string::npos);
  EXPECT_NE(got.find("event: hello"), std::string::npos);
  EXPECT_NE(got.find("\"seq\":20"), std::string::npos);
  EXPECT_NE(got.find("[1019,null,2000,45000]"), std::string::npos);
  EXPECT_EQ(site_->streams(), 1u);
  Publish(MakeFrame(21, SystemClock().RealtimeNs(), {5000, 1, std::nullopt, 46000}));
  ASSERT_EQ(ReadUntil(fd, "[5000,1,null,46000]", &got), "found");
  EXPECT_NE(got.find("\"seq\":21"), std::string::npos);
  ::close(fd);
}

TEST_F(LiveSiteTest, StreamsBeyondTheLimitAreRefusedAndScrapesStillServed) {
  Start(2);
  int a = OpenStream(), b = OpenStream();
  std::string ga, gb;
  ASSERT_EQ(ReadUntil(a, "event: frame", &ga), "found");
  ASSERT_EQ(ReadUntil(b, "event: frame", &gb), "found");
  auto c = Client();
  auto third = c.Get("/api/live");
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 503);
  EXPECT_NE(third->body.find("too many live streams (limit 2)"), std::string::npos);
  EXPECT_EQ(site_->streams_refused(), 1u);
  auto scrape = c.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  ::close(a);
  ::close(b);
}

TEST_F(LiveSiteTest, StopEndsOpenStreamsAndReturns) {
  Start();
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) {
    fds.push_back(OpenStream());
    std::string got;
    ASSERT_EQ(ReadUntil(fds.back(), "event: frame", &got), "found");
  }
  listener_->Stop();  // a hang here fails the test by its timeout
  for (int fd : fds) {
    std::string got;
    // The chunked stream ends with its last chunk, or the socket closes.
    std::string r = ReadUntil(fd, "0\r\n\r\n", &got);
    EXPECT_NE(r, "timeout");
    ::close(fd);
  }
  EXPECT_EQ(site_->streams(), 0u);
}

TEST_F(LiveSiteTest, HistoryAnswersWithSeriesAndWindowsOrA400) {
  const int64_t now = SystemClock().RealtimeNs();
  auto w = store_->AddWindow("bench \"run\"", now - 20 * kSec, now - 10 * kSec);
  ASSERT_TRUE(w.ok());
  Start();
  auto c = Client();
  auto r = c.Get("/api/history?from=-1m&step=1s&channels=rail/VDD_IN/power,rail/VDD_SOC/power");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["series"].size(), 2u);
  EXPECT_EQ(j["series"][0]["key"], "rail/VDD_IN/power");
  EXPECT_TRUE(j["series"][0]["t"].empty());  // never read: no step, no 0
  EXPECT_EQ(j["series"][1]["key"], "rail/VDD_SOC/power");
  // Raw frames, or rollup rows where the range reaches past the raw tier.
  EXPECT_FALSE(j["series"][1]["t"].empty());
  EXPECT_LE(j["series"][1]["t"].size(), 20u);
  EXPECT_EQ(j["series"][1]["max"].back(), 1019);
  ASSERT_EQ(j["windows"].size(), 1u);
  EXPECT_EQ(j["windows"][0]["label"], "bench \"run\"");
  for (const char* bad :
       {"/api/history?from=now&to=-1h", "/api/history?step=0s", "/api/history?from=%00",
        "/api/history?channels=x", "/api/history?from=-99999999999999999999d",
        "/api/energy?from=soon", "/api/energy?window=-1", "/api/energy?window=1x",
        "/api/energy?from=+1h&to=+2h"}) {
    auto b = c.Get(bad);
    ASSERT_TRUE(b) << bad;
    EXPECT_EQ(b->status, 400) << bad << ": " << b->body;
    json e = json::parse(b->body, nullptr, false);
    ASSERT_FALSE(e.is_discarded()) << bad;
    EXPECT_FALSE(e["error"].get<std::string>().empty()) << bad;
  }
  auto none = c.Get("/api/energy?window=999");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  auto energy = c.Get("/api/energy?window=" + std::to_string(*w));
  ASSERT_TRUE(energy);
  ASSERT_EQ(energy->status, 200) << energy->body;
  json e = json::parse(energy->body);
  EXPECT_EQ(e["window"], *w);
  EXPECT_NEAR(e["duration_s"].get<double>(), 10.0, 1e-9);
}

TEST_F(LiveSiteTest, HistoryAndEnergyHoldQueuedFramesWithoutACommit) {
  store_->SetCommitInterval(3'600'000);  // the store would wait an hour on its own
  const int64_t t0 = SystemClock().RealtimeNs() - 10 * kSec;
  for (uint64_t i = 0; i < 5; ++i) {
    Publish(MakeFrame(21 + i, t0 + static_cast<int64_t>(i) * kSec,
                      {3000 + static_cast<int64_t>(i), std::nullopt, 2000, 45000}));
  }
  Start();
  auto c = Client();
  auto queued = [&] {
    auto st = store_->Stats();
    EXPECT_TRUE(st.ok());
    return st.ok() ? st->queued_frames : 0;
  };
  const char* q = "/api/history?from=-1m&step=1s&channels=rail/VDD_SOC/power";
  auto r = c.Get(q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["series"][0]["max"].back(), 3004);  // the newest queued frame
  EXPECT_EQ(queued(), 5u);  // read from the writer's memory, not committed

  // Another read right after (any page's): the frame sampled since too,
  // still without a commit.
  Publish(MakeFrame(26, t0 + 5 * kSec, {3005, std::nullopt, 2000, 45000}));
  r = c.Get(q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["series"][0]["max"].back(), 3005);
  EXPECT_EQ(queued(), 6u);

  // The energy of a range up to now reads them the same way: its peak is
  // the newest queued frame's, each time, and nothing is committed.
  auto soc_peak = [&] {
    auto e = c.Get("/api/energy?from=-1m");
    EXPECT_TRUE(e);
    if (!e) return -1.0;
    EXPECT_EQ(e->status, 200) << e->body;
    const json j = json::parse(e->body);
    for (const auto& rail : j["rails"]) {
      if (rail["name"] == "VDD_SOC" && rail["peak_w"].is_number()) {
        return rail["peak_w"].get<double>();
      }
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(soc_peak(), 3.005);
  EXPECT_EQ(queued(), 6u);
  Publish(MakeFrame(27, t0 + 6 * kSec, {3006, std::nullopt, 2000, 45000}));
  EXPECT_DOUBLE_EQ(soc_peak(), 3.006);
  EXPECT_EQ(queued(), 7u);
}

TEST_F(LiveSiteTest, WithATokenEveryRouteRefusesARequestWithoutIt) {
  const std::string token = "s3cret-token-0123456789";
  Start(16, token);
  auto c = Client();
  for (const char* path : {"/", "/live.js", "/api/live", "/api/history", "/api/energy?from=-1m",
                           "/metrics", "/nothing"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_TRUE(r->has_header("WWW-Authenticate")) << path;
    EXPECT_EQ(r->body.find("VDD_IN"), std::string::npos) << path;
    auto wrong = c.Get(path, {{"Authorization", "Bearer " + token + "x"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401) << path;
  }
  EXPECT_EQ(site_->streams(), 0u);
  auto ok = c.Get("/api/history", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  // A browser's answer to the prompt: Basic with the token as the password.
  c.set_basic_auth("anyone", token.c_str());
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  c.set_basic_auth("anyone", "wrong");
  EXPECT_EQ(c.Get("/")->status, 401);
}

TEST_F(LiveSiteTest, NobodyWatchingSendsNothing) {
  Start();
  for (uint64_t i = 0; i < 5; ++i) Publish(MakeFrame(100 + i, SystemClock().RealtimeNs(), {}));
  EXPECT_EQ(site_->frames_sent(), 0u);
  EXPECT_EQ(site_->streams(), 0u);
}

}  // namespace
}  // namespace edgemon::web
