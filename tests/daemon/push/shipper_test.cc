// The shipper against a real HTTP receiver (cpp-httplib's server on
// loopback, decoding what it gets as Prometheus does) and a real store.
#include "daemon/push/shipper.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <snappy.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/store/sql.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "remote_write.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/inventory.h"

namespace edgemon::push {
namespace {

using testing::AddChannel;

constexpr int64_t kT0 = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kSec = 1'000'000'000;

// A remote-write receiver: answers from a script (status, Retry-After,
// body), then 204; keeps every request's samples by series name.
class Receiver {
 public:
  struct Answer {
    Answer(int status_in = 204, std::string retry_after_in = "", std::string body_in = "",
           std::string location_in = "")
        : status(status_in),
          retry_after(std::move(retry_after_in)),
          body(std::move(body_in)),
          location(std::move(location_in)) {}
    int status;
    std::string retry_after;
    std::string body;
    std::string location;
  };
  Receiver() {
    server_.Post("/api/v1/write", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lk(mu_);
      headers_ = req.headers;
      Answer a;
      if (!script_.empty()) {
        a = script_.front();
        script_.pop_front();
      }
      ++requests_;
      res.status = a.status;
      if (!a.retry_after.empty()) res.set_header("Retry-After", a.retry_after);
      if (!a.location.empty()) res.set_header("Location", a.location);
      if (!a.body.empty()) res.set_content(a.body, "text/plain");
      std::string raw;
      prometheus::WriteRequest w;
      if (!snappy::Uncompress(req.body.data(), req.body.size(), &raw) || !w.ParseFromString(raw)) {
        bad_ = true;
        return;
      }
      if (a.status / 100 != 2) return;
      for (const auto& ts : w.timeseries()) {
        std::string name;
        for (const auto& l : ts.labels()) {
          if (l.name() == "__name__") name = l.value();
        }
        for (const auto& s : ts.samples()) samples_[name].emplace_back(s.timestamp(), s.value());
      }
    });
    server_.Post("/v1/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lk(mu_);
      headers_ = req.headers;
      otlp_.push_back(req.body);
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  void Script(std::vector<Answer> answers) {
    std::lock_guard lk(mu_);
    script_.assign(answers.begin(), answers.end());
  }
  std::vector<std::pair<int64_t, double>> Samples(const std::string& name) {
    std::lock_guard lk(mu_);
    return samples_[name];
  }
  std::vector<std::string> otlp() {
    std::lock_guard lk(mu_);
    return otlp_;
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() {
    std::lock_guard lk(mu_);
    return requests_;
  }
  std::string Header(const std::string& name) {
    std::lock_guard lk(mu_);
    auto it = headers_.find(name);
    return it == headers_.end() ? "" : it->second;
  }
  bool bad() {
    std::lock_guard lk(mu_);
    return bad_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::deque<Answer> script_;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> samples_;
  httplib::Headers headers_;
  std::vector<std::string> otlp_;
  int requests_ = 0;
  bool bad_ = false;
};

class ShipperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("edgemon-push-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Channel& in = AddChannel(inv_, Kind::kRail, "VDD_IN", Field::kPower);
    in.flags = kFlagInputRail;
    AddChannel(inv_, Kind::kThermal, "cpu-thermal", Field::kTemp);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // The store reads the shipper's clock unless `o` brings its own.
  void Open(store::RingStoreOptions o = {}) {
    if (o.clock == nullptr) o.clock = &clock_;
    auto s = store::RingStore::Open((dir_ / "e.db").string(), std::move(o));
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
    store_->SetInventory(inv_);
  }
  // Frames seq 1.., one a second from kT0, power 1000 + i mW, committed
  // (or left queued for the store's writer).
  void Append(int n, int64_t step = kSec, bool commit = true) {
    for (int i = 0; i < n; ++i, ++appended_) {
      Frame f;
      f.seq = store_->next_seq();
      f.boottime_ns = 1000 * kSec + appended_ * step;
      f.realtime_ns = kT0 + appended_ * step;
      f.values = {1000 + appended_, 40000};
      ASSERT_NE(store_->Append(std::move(f)), 0u);
    }
    if (commit) {
      ASSERT_TRUE(store_->Flush().ok());
    }
  }
  ShipperOptions Options() {
    ShipperOptions o;
    o.url = *runtime::ParseUrl(receiver_.url());
    o.http.timeout_ms = 5000;
    o.http.user_agent = "edgemon/test";
    o.batch_samples = 20;  // 10 frames of 2 channels
    o.min_backoff_ns = kSec;
    o.max_backoff_ns = 8 * kSec;
    o.identity.host_name = "orin-7";
    o.log = [this](int level, const std::string& m) {
      std::lock_guard lk(log_mu_);
      log_.push_back(std::to_string(level) + " " + m);
    };
    o.clock = &clock_;
    return o;
  }
  std::string Log() {
    std::lock_guard lk(log_mu_);
    std::string all;
    for (const auto& l : log_) all += l + "\n";
    return all;
  }

  testing::FakeClock clock_;
  // A store's own clock that moves only when told (outlives store_).
  testing::FakeClock paced_clock_{testing::FakeClock::Mode::kPaced};
  Receiver receiver_;
  std::filesystem::path dir_;
  Inventory inv_;
  std::unique_ptr<store::RingStore> store_;
  int64_t appended_ = 0;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(ShipperTest, SendsEveryFrameOldestFirstWithItsOwnTimeThenIdles) {
  Open();
  Append(25);
  Shipper s(*store_, Options());
  std::vector<Shipper::Step> steps;
  for (int i = 0; i < 4; ++i) steps.push_back(s.ShipOnce().step);
  EXPECT_EQ(steps, (std::vector<Shipper::Step>{Shipper::Step::kSent, Shipper::Step::kSent,
                                               Shipper::Step::kSent, Shipper::Step::kIdle}));
  auto power = receiver_.Samples("edgemon_rail_power_watts");
  ASSERT_EQ(power.size(), 25u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(power[i].first, (kT0 + i * kSec) / 1'000'000);
    EXPECT_DOUBLE_EQ(power[i].second, (1000 + i) / 1000.0);
  }
  EXPECT_EQ(receiver_.Samples("edgemon_temperature_celsius").size(), 25u);
  EXPECT_FALSE(receiver_.bad());
  EXPECT_EQ(receiver_.Header("Content-Encoding"), "snappy");
  EXPECT_EQ(receiver_.Header("Content-Type"), "application/x-protobuf");
  EXPECT_EQ(receiver_.Header("X-Prometheus-Remote-Write-Version"), "0.1.0");
  EXPECT_EQ(receiver_.Header("User-Agent"), "edgemon/test");
  auto h = s.Health();
  EXPECT_EQ(h.samples_sent, 50u);
  EXPECT_EQ(h.samples_retried, 0u);
  EXPECT_EQ(h.backlog_frames, 0);
  EXPECT_EQ(h.backlog_age_ns, 0);
  auto cursor = store_->GetPushCursor(CursorName(Options()));
  ASSERT_TRUE(cursor.ok());
  ASSERT_TRUE(cursor->has_value());
  EXPECT_EQ((*cursor)->seq, 25u);
  EXPECT_EQ((*cursor)->realtime_ns, kT0 + 24 * kSec);
}

TEST_F(ShipperTest, FramesStillQueuedForTheStoreGoOutAtMostOnceAnInterval) {
  // The store commits once an hour on its own (paced) clock: what the
  // shipper finds past the committed frames, it reads from the writer's
  // memory, committing nothing; the cursor at such a frame reaches the file
  // only with the frame (store invariant 16).
  store::RingStoreOptions o;
  o.commit_interval_ms = 3'600'000;
  o.clock = &paced_clock_;
  Open(o);
  Append(5, kSec, /*commit=*/false);
  ShipperOptions so = Options();
  Shipper s(*store_, so);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(receiver_.Samples("edgemon_rail_power_watts").size(), 5u);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);

  Append(3, kSec, /*commit=*/false);  // within the interval of that commit: they wait for the store
                                      // or the next look
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->queued_frames, 3u);
  EXPECT_EQ(receiver_.Samples("edgemon_rail_power_watts").size(), 5u);

  clock_.Advance(so.interval_ns);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  auto power = receiver_.Samples("edgemon_rail_power_watts");
  ASSERT_EQ(power.size(), 8u);
  EXPECT_EQ(power.back().first, (kT0 + 7 * kSec) / 1'000'000);
  st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->frames,
            5);  // the first look committed the channels' rows, and the frames with them
  EXPECT_EQ(st->queued_frames, 3u);
  // The cursor: at frame 8 for the shipper, at 5 in the file until frame 8 is.
  auto cursor = store_->GetPushCursor(CursorName(so));
  ASSERT_TRUE(cursor.ok() && cursor->has_value());
  EXPECT_EQ((*cursor)->seq, 8u);
  auto in_file = [&] {
    auto db = store::sql::Conn::Open((dir_ / "e.db").string(), SQLITE_OPEN_READONLY);
    EXPECT_TRUE(db.ok());
    if (!db.ok()) return int64_t{-1};
    auto seq = (*db)->QueryInt("SELECT seq FROM push_cursors");
    EXPECT_TRUE(seq.ok());
    return seq.ok() ? *seq : int64_t{-1};
  };
  EXPECT_EQ(in_file(), 5);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(in_file(), 8);
  cursor = store_->GetPushCursor(CursorName(so));
  ASSERT_TRUE(cursor.ok() && cursor->has_value());
  EXPECT_EQ((*cursor)->seq, 8u);
  EXPECT_EQ((*cursor)->realtime_ns, kT0 + 7 * kSec);
}

TEST_F(ShipperTest, RetriesAfter500And429HonouringRetryAfterThenMovesOn) {
  Open();
  Append(5);
  receiver_.Script({{500, "", "tsdb busy"}, {429, "7", "slow down"}});
  Shipper s(*store_, Options());
  auto r = s.ShipOnce();
  EXPECT_EQ(r.step, Shipper::Step::kRetry);
  EXPECT_GE(r.wait_ns, kSec / 2);  // min_backoff with jitter
  EXPECT_LE(r.wait_ns, kSec);
  r = s.ShipOnce();
  EXPECT_EQ(r.step, Shipper::Step::kRetry);
  EXPECT_GE(r.wait_ns, 7 * kSec);  // Retry-After over the doubled backoff
  auto cursor = store_->GetPushCursor(CursorName(Options()));
  ASSERT_TRUE(cursor.ok());
  EXPECT_FALSE(cursor->has_value());  // nothing acknowledged yet
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(receiver_.Samples("edgemon_rail_power_watts").size(), 5u);
  auto h = s.Health();
  EXPECT_EQ(h.samples_retried, 20u);
  EXPECT_EQ(h.samples_sent, 10u);
  EXPECT_EQ(h.samples_failed, 0u);
  EXPECT_NE(Log().find("tsdb busy"), std::string::npos) << Log();
}

TEST_F(ShipperTest, BackoffDoublesUpToItsCap) {
  Open();
  Append(1);
  receiver_.Script(std::vector<Receiver::Answer>(8, {503, "", ""}));
  Shipper s(*store_, Options());
  int64_t prev_cap = 0;
  for (int i = 0; i < 6; ++i) {
    auto r = s.ShipOnce();
    ASSERT_EQ(r.step, Shipper::Step::kRetry);
    const int64_t cap = std::min<int64_t>(kSec << i, 8 * kSec);
    EXPECT_GE(r.wait_ns, cap / 2) << i;
    EXPECT_LE(r.wait_ns, cap) << i;
    EXPECT_GE(cap, prev_cap);
    prev_cap = cap;
  }
}

TEST_F(ShipperTest, A400IsCountedLoggedAndMovedPast) {
  Open();
  Append(15);
  receiver_.Script({{400, "", "out of bounds: sample too old"}});
  Shipper s(*store_, Options());
  auto r = s.ShipOnce();
  EXPECT_EQ(r.step, Shipper::Step::kRefused);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);
  auto power = receiver_.Samples("edgemon_rail_power_watts");
  ASSERT_EQ(power.size(), 5u);  // the first 10 frames were refused
  EXPECT_EQ(power[0].first, (kT0 + 10 * kSec) / 1'000'000);
  auto h = s.Health();
  EXPECT_EQ(h.samples_failed, 20u);
  EXPECT_EQ(h.batches_failed, 1u);
  EXPECT_TRUE(h.last_error_ns.has_value());
  EXPECT_NE(Log().find("out of bounds: sample too old"), std::string::npos) << Log();
  EXPECT_NE(Log().find("2 "), std::string::npos);  // an error line
}

TEST_F(ShipperTest, AnUnauthorisedDestinationKeepsItsBacklog) {
  Open();
  Append(3);
  receiver_.Script({{401, "", "bad token"}, {403, "", "forbidden"}});
  Shipper s(*store_, Options());
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(receiver_.Samples("edgemon_rail_power_watts").size(), 3u);
  EXPECT_EQ(s.Health().samples_failed, 0u);
}

TEST(PushVerdict, StatusCodesMapToTheDocumentedDelivery) {
  for (int code : {200, 201, 204, 299}) EXPECT_EQ(Classify(code), Verdict::kAcknowledged) << code;
  for (int code : {100, 408, 429, 500, 502, 503, 504, 599}) {
    EXPECT_EQ(Classify(code), Verdict::kRetry) << code;
  }
  for (int code : {301, 302, 303, 307, 308})
    EXPECT_EQ(Classify(code), Verdict::kRedirected) << code;
  for (int code : {400, 413, 415, 422}) EXPECT_EQ(Classify(code), Verdict::kRefused) << code;
  for (int code : {401, 403, 404, 405, 407, 409, 410, 451}) {
    EXPECT_EQ(Classify(code), Verdict::kMisconfigured) << code;
  }
}

TEST_F(ShipperTest, ARedirectIsRetriedNotFollowedWithItsLocationLogged) {
  Open();
  Append(3);
  receiver_.Script({{307, "", "", "https://vm.example/api/v1/write"}, {308, "", "", ""}});
  Shipper s(*store_, Options());
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  auto cursor = store_->GetPushCursor(CursorName(Options()));
  ASSERT_TRUE(cursor.ok());
  EXPECT_FALSE(cursor->has_value());  // nothing moved past
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(receiver_.Samples("edgemon_rail_power_watts").size(), 3u);
  EXPECT_EQ(s.Health().samples_failed, 0u);
  EXPECT_NE(Log().find("redirect to https://vm.example/api/v1/write not followed"),
            std::string::npos)
      << Log();
}

TEST_F(ShipperTest, RetryAfterIsHonouredUpToItsCapWhateverItsSize) {
  Open();
  Append(1);
  receiver_.Script({{503, "99999999999999999999", ""}, {429, "7200", ""}, {503, "2", ""}});
  Shipper s(*store_, Options());
  EXPECT_EQ(s.ShipOnce().wait_ns, kRetryAfterCapMs * 1'000'000);
  EXPECT_EQ(s.ShipOnce().wait_ns, kRetryAfterCapMs * 1'000'000);
  auto r = s.ShipOnce();
  EXPECT_GE(r.wait_ns, 2 * kSec);
  EXPECT_LE(r.wait_ns, 4 * kSec);  // the doubled backoff, not the cap
}

TEST_F(ShipperTest, ABigReplyBodyIsNotKeptAndA2xxStandsWhateverItsBody) {
  Open();
  Append(3);
  receiver_.Script({{503, "", std::string(8 << 20, 'e')}, {200, "", std::string(8 << 20, 'o')}});
  Shipper s(*store_, Options());
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);
  EXPECT_LT(Log().size(), 2000u);  // the message is cut to 512 bytes
  EXPECT_LE(s.Health().last_error.size(), 600u);
}

TEST_F(ShipperTest, TheBacklogIsReadFromTheStoreWhenAsked) {
  Open();
  Append(5);
  clock_.JumpRealtime(kT0 + 100 * kSec - clock_.RealtimeNs());
  Shipper s(*store_, Options());
  auto h = s.Health();  // before any request
  EXPECT_EQ(h.backlog_frames, 5);
  EXPECT_EQ(h.backlog_age_ns, 100 * kSec);  // the oldest frame, stored at kT0
  receiver_.Script({{503, "", ""}});
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  Append(4);  // stored while the destination fails
  EXPECT_EQ(s.Health().backlog_frames, 9);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(s.Health().backlog_frames, 0);
  EXPECT_EQ(s.Health().backlog_age_ns, 0);
}

TEST_F(ShipperTest, ADestinationFailingForAnHourIsFlaggedAndLoggedOnce) {
  Open();
  Append(1);
  receiver_.Script(std::vector<Receiver::Answer>(4, {503, "", "down"}));
  Shipper s(*store_, Options());
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  const int64_t since = clock_.RealtimeNs();
  clock_.Advance(kStalledAfterNs - kSec);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_FALSE(s.Health().stalled);
  EXPECT_EQ(Log().find("failing since"), std::string::npos);
  clock_.Advance(kSec);
  EXPECT_TRUE(s.Health().stalled);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kRetry);
  auto h = s.Health();
  EXPECT_EQ(h.failing_since_ns, since);
  EXPECT_NE(h.last_error.find("down"), std::string::npos);
  const std::string log = Log();
  const size_t first = log.find("failing since");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("failing since", first + 1), std::string::npos);  // once
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  h = s.Health();
  EXPECT_FALSE(h.stalled);
  EXPECT_FALSE(h.failing_since_ns.has_value());
}

TEST_F(ShipperTest, ANewShipperResumesFromTheStoredCursor) {
  Open();
  Append(10);
  {
    Shipper s(*store_, Options());
    EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  }
  store_.reset();
  Open();
  Append(4);
  Shipper again(*store_, Options());
  EXPECT_EQ(again.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(again.ShipOnce().step, Shipper::Step::kIdle);
  auto power = receiver_.Samples("edgemon_rail_power_watts");
  ASSERT_EQ(power.size(), 14u);  // none twice, none missing
  for (size_t i = 0; i < power.size(); ++i) {
    EXPECT_EQ(power[i].first, (kT0 + static_cast<int64_t>(i) * kSec) / 1'000'000);
  }
}

TEST_F(ShipperTest, ACursorOlderThanTheRawFramesGetsTheRollupTierThenTheFrames) {
  store::RingStoreOptions o;
  o.raw_retention_ns = 120 * kSec;
  o.rollup_period_ns = 60 * kSec;
  Open(o);
  Append(2);
  ASSERT_TRUE(store_->SetPushCursor(CursorName(Options()), {1, kT0, INT64_MIN, 0}).ok());
  Append(598);  // 10 minutes: the raw tier keeps the last 2
  auto stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  ASSERT_GT(*stats->first_seq, 2u);
  ShipperOptions opt = Options();
  opt.batch_samples = 1000;
  Shipper s(*store_, opt);
  for (int i = 0; i < 20 && s.ShipOnce().step != Shipper::Step::kIdle; ++i) {
  }
  auto h = s.Health();
  EXPECT_EQ(h.rollup_gaps, 1u);
  EXPECT_NE(Log().find("deleted before they were sent"), std::string::npos) << Log();
  auto power = receiver_.Samples("edgemon_rail_power_watts");
  // Rollup periods starting after the cursor, one sample each at the
  // period's start with its average, then every raw frame held.
  ASSERT_FALSE(power.empty());
  EXPECT_EQ(power.front().first, (kT0 + 60 * kSec) / 1'000'000);
  EXPECT_DOUBLE_EQ(power.front().second, (1000 + 60 + 1000 + 119) / 2.0 / 1000);
  for (size_t i = 1; i < power.size(); ++i) EXPECT_LT(power[i - 1].first, power[i].first);
  EXPECT_EQ(power.back().first, (kT0 + 599 * kSec) / 1'000'000);
  const size_t raw = static_cast<size_t>(*stats->last_seq - *stats->first_seq + 1);
  EXPECT_GE(power.size(), raw + 1);
}

// OTLP covers the rollup span as remote-write does: the periods' points at
// their starts, then the raw frames.
TEST_F(ShipperTest, OtlpSendsTheRollupSpanToo) {
  store::RingStoreOptions o;
  o.raw_retention_ns = 120 * kSec;
  o.rollup_period_ns = 60 * kSec;
  Open(o);
  Append(2);
  ShipperOptions opt = Options();
  opt.url = *runtime::ParseUrl(receiver_.base() + "/v1/metrics");
  opt.protocol = Protocol::kOtlp;
  opt.batch_samples = 1000;
  ASSERT_TRUE(store_->SetPushCursor(CursorName(opt), {1, kT0, INT64_MIN, 0}).ok());
  Append(598);
  Shipper s(*store_, opt);
  for (int i = 0; i < 20 && s.ShipOnce().step != Shipper::Step::kIdle; ++i) {
  }
  EXPECT_EQ(s.Health().rollup_gaps, 1u);
  std::vector<std::pair<uint64_t, double>> power;  // hw.host.power (VDD_IN)
  for (const std::string& body : receiver_.otlp()) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest req;
    ASSERT_TRUE(req.ParseFromString(body));
    for (const auto& m : req.resource_metrics(0).scope_metrics(0).metrics()) {
      if (m.name() != "hw.host.power") continue;
      for (const auto& p : m.gauge().data_points()) {
        power.emplace_back(p.time_unix_nano(), p.as_double());
      }
    }
  }
  ASSERT_FALSE(power.empty());
  EXPECT_EQ(power.front().first, static_cast<uint64_t>(kT0 + 60 * kSec));  // a period's start
  // The period's average, to the stored unit (1 mW) as a frame holds it.
  EXPECT_NEAR(power.front().second, (1000 + 60 + 1000 + 119) / 2.0 / 1000, 0.00051);
  EXPECT_EQ(power.back().first, static_cast<uint64_t>(kT0 + 599 * kSec));
  EXPECT_EQ(Log().find("not sent over OTLP"), std::string::npos);
}

TEST_F(ShipperTest, ClosedWindowsFollowTheFramesThatCoverThem) {
  Open();
  Append(10);
  auto id = store_->AddWindow("resnet50", kT0 + 2 * kSec, kT0 + 6 * kSec);
  auto late = store_->AddWindow("later", kT0 + 8 * kSec, kT0 + 30 * kSec);  // no frames yet
  ASSERT_TRUE(id.ok() && late.ok());
  ShipperOptions o = Options();
  o.batch_samples = 1000;
  std::vector<int64_t> asked;
  o.window_energy = [&](const Window& w) -> Result<WindowEnergy> {
    asked.push_back(w.id);
    RailSummary r;
    r.name = "VDD_IN";
    r.energy_mj = 4000.0 + static_cast<double>(w.id);
    return WindowEnergy{w, {r}};
  };
  Shipper s(*store_, o);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);  // the frames
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);  // the window they cover
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);  // "later" waits for its frames
  EXPECT_EQ(asked, std::vector<int64_t>{*id});
  auto w = receiver_.Samples("edgemon_window_energy_joules");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], (std::pair<int64_t, double>{(kT0 + 6 * kSec) / 1'000'000, 4 + *id / 1000.0}));
  Append(25);
  for (int i = 0; i < 5 && s.ShipOnce().step != Shipper::Step::kIdle; ++i) {
  }
  EXPECT_EQ(receiver_.Samples("edgemon_window_energy_joules").size(), 2u);
  auto cursor = store_->GetPushCursor(CursorName(o));
  ASSERT_TRUE(cursor.ok() && cursor->has_value());
  EXPECT_EQ((*cursor)->window_id, *late);
  EXPECT_EQ((*cursor)->window_end_ns, kT0 + 30 * kSec);
}

TEST_F(ShipperTest, OtlpGoesUncompressedToItsPathWithEveryFrame) {
  Open();
  Append(4);
  ShipperOptions o = Options();
  o.url = *runtime::ParseUrl(receiver_.base() + "/v1/metrics");
  o.protocol = Protocol::kOtlp;
  Shipper s(*store_, o);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kSent);
  EXPECT_EQ(s.ShipOnce().step, Shipper::Step::kIdle);
  auto bodies = receiver_.otlp();
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(receiver_.Header("Content-Type"), "application/x-protobuf");
  EXPECT_EQ(receiver_.Header("Content-Encoding"), "");
  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(bodies[0]));
  size_t points = 0;
  for (const auto& rm : req.resource_metrics()) {
    for (const auto& sm : rm.scope_metrics()) {
      for (const auto& m : sm.metrics()) {
        points += m.has_gauge() ? static_cast<size_t>(m.gauge().data_points_size())
                                : static_cast<size_t>(m.sum().data_points_size());
      }
    }
  }
  EXPECT_EQ(points, 8u);  // 4 frames of 2 channels
  EXPECT_EQ(s.Health().samples_sent, 8u);
  EXPECT_NE(CursorName(o).find("otlp "), std::string::npos);
}

// A backlog drains at the rate limit on average, with at most one second
// of credit after an idle spell.
TEST(PushRateLimit, BatchesAverageTheLimitWithOneSecondOfCredit) {
  int64_t pace = 0;
  int64_t now = 100 * kSec;  // idle for long: one second of credit, no more
  const int64_t start = now;
  for (int i = 0; i < 50; ++i) now += RateLimitWait(pace, now, 2000, 1000.0);
  // 100000 samples at 1000/s: 100 s, less the second of credit.
  EXPECT_EQ(now - start, 99 * kSec);
  // A batch sent late (the receiver was slow) waits less, never negative.
  now += 10 * kSec;
  EXPECT_EQ(RateLimitWait(pace, now, 2000, 1000.0), kSec);
  EXPECT_EQ(RateLimitWait(pace, now, 500, 0), 0);  // no limit
}

}  // namespace
}  // namespace edgemon::push
