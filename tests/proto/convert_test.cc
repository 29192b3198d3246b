// proto/convert.h: the model <-> edgemon.v1 conversions the daemon encodes
// with and the client library decodes with. What one side writes, the other
// reads back field for field; absent stays absent; hostile input is refused.
#include "proto/convert.h"

#include <gtest/gtest.h>

#include <limits>

namespace edgemon::wire {
namespace {

TEST(WireFrame, FromProtoPlacesValuesById) {
  v1::Frame pb;
  pb.set_seq(7);
  pb.set_realtime_ns(1'000);
  pb.set_boottime_ns(500);
  pb.set_generation(3);
  pb.add_ids(5);
  pb.add_values(-3);
  pb.add_ids(2);
  pb.add_values(10);
  std::optional<Frame> f = FrameFromProto(pb);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->seq, 7u);
  EXPECT_EQ(f->realtime_ns, 1'000);
  EXPECT_EQ(f->boottime_ns, 500);
  ASSERT_EQ(f->values.size(), 6u);
  EXPECT_EQ(f->Get(2), 10);
  EXPECT_EQ(f->Get(5), -3);
  EXPECT_FALSE(f->Get(3));  // absent, not 0
  EXPECT_FALSE(f->Get(0));
  EXPECT_FALSE(f->Get(99));

  v1::Frame back;
  ToProto(*f, {}, 3, &back);
  EXPECT_EQ(back.generation(), 3u);
  ASSERT_EQ(back.ids_size(), 2);
  EXPECT_EQ(back.ids(0), 2u);  // ascending id order
  EXPECT_EQ(back.values(0), 10);
  EXPECT_EQ(back.ids(1), 5u);
  EXPECT_EQ(back.values(1), -3);

  ToProto(*f, {5, 3}, 4, &back);  // a subset: only its present values
  ASSERT_EQ(back.ids_size(), 1);
  EXPECT_EQ(back.ids(0), 5u);
  EXPECT_EQ(back.generation(), 4u);
}

TEST(WireFrame, MalformedFramesAreRefused) {
  v1::Frame uneven;
  uneven.add_ids(1);
  uneven.add_ids(2);
  uneven.add_values(4);
  EXPECT_FALSE(FrameFromProto(uneven));
  v1::Frame huge;
  huge.add_ids(kMaxChannelId + 1);
  huge.add_values(1);
  EXPECT_FALSE(FrameFromProto(huge));  // would allocate gigabytes
  v1::Frame empty;
  ASSERT_TRUE(FrameFromProto(empty));
  EXPECT_TRUE(FrameFromProto(empty)->values.empty());
}

TEST(WireChannel, FromProto) {
  v1::Channel pb;
  pb.set_id(4);
  pb.set_kind("rail");
  pb.set_name("VDD_IN");
  pb.set_field("power");
  pb.set_unit("mW");
  pb.set_device("ina3221 1-0040");
  pb.add_flags("input");
  pb.add_flags("derived");
  pb.set_has_max(true);
  pb.set_max(20'000);
  pb.set_min(5);  // has_min false: not a limit
  (*pb.mutable_attrs())["label"] = "VDD_IN";
  (*pb.mutable_attrs())["chip"] = "ina3221";
  auto* trip = pb.add_trips();
  trip->set_type("critical");
  trip->set_temp_mc(105'000);
  std::optional<Channel> c = ChannelFromProto(pb);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, 4u);
  EXPECT_EQ(c->kind, Kind::kRail);
  EXPECT_EQ(c->field, Field::kPower);
  EXPECT_EQ(c->unit, Unit::kMilliwatt);
  EXPECT_EQ(c->device, "ina3221 1-0040");
  EXPECT_EQ(c->flags, kFlagInputRail | kFlagDerived);
  EXPECT_EQ(c->max, 20'000);
  EXPECT_FALSE(c->min);
  EXPECT_FALSE(c->crit);
  ASSERT_EQ(c->attrs.size(), 2u);
  EXPECT_EQ(c->attrs[0].first, "chip");  // sorted
  ASSERT_NE(c->Attr("label"), nullptr);
  EXPECT_EQ(*c->Attr("label"), "VDD_IN");
  ASSERT_EQ(c->trips.size(), 1u);
  EXPECT_EQ(c->trips[0].temp_mc, 105'000);
  EXPECT_EQ(c->Key(), "rail/VDD_IN/power");

  pb.set_kind("quantum");
  EXPECT_FALSE(ChannelFromProto(pb));
  pb.set_kind("rail");
  pb.set_field("flux");
  EXPECT_FALSE(ChannelFromProto(pb));

  EXPECT_EQ(UnitFromString("KiB"), Unit::kKib);
  EXPECT_FALSE(UnitFromString("furlong"));
}

TEST(WireChannel, RoundTrip) {
  Channel c;
  c.id = 9;
  c.kind = Kind::kThermal;
  c.name = "cpu-thermal";
  c.field = Field::kTemp;
  c.unit = Unit::kMilliCelsius;
  c.device = "thermal_zone0";
  c.flags = kFlagConstant | kFlagCounter;
  c.min = -40'000;
  c.crit = 0;  // a limit of 0 is a limit
  c.trips = {{"passive", 95'000}};
  c.attrs = {{"governor", "step_wise"}};
  v1::Channel pb;
  ToProto(c, &pb);
  EXPECT_EQ(pb.key(), "thermal/cpu-thermal/temp");
  EXPECT_TRUE(pb.has_crit());
  EXPECT_FALSE(pb.has_max());
  std::optional<Channel> back = ChannelFromProto(pb);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->Key(), c.Key());
  EXPECT_EQ(back->flags, c.flags);
  EXPECT_EQ(back->min, c.min);
  EXPECT_EQ(back->crit, std::optional<int64_t>(0));
  EXPECT_FALSE(back->max);
  EXPECT_EQ(back->attrs, c.attrs);
  ASSERT_EQ(back->trips.size(), 1u);
  EXPECT_EQ(back->trips[0].type, "passive");
}

TEST(WireBoard, RoundTripSortsModes) {
  BoardInfo b;
  b.model = "Jetson AGX Orin";
  b.nvpmodel = "MAXN";
  b.nvpmodel_id = 0;
  b.nvpmodel_modes = {{3, "50W"}, {0, "MAXN"}};
  v1::BoardInfo pb;
  ToProto(b, &pb);
  BoardInfo back = BoardFromProto(pb);
  EXPECT_EQ(back.model, b.model);
  EXPECT_EQ(back.nvpmodel, "MAXN");
  ASSERT_EQ(back.nvpmodel_modes.size(), 2u);
  EXPECT_EQ(back.nvpmodel_modes[0], (std::pair<int64_t, std::string>{0, "MAXN"}));
}

TEST(WireBucket, RoundTripAndHostileCount) {
  const Bucket b{1'000, -5, 2.5, 10, 4};
  v1::Bucket pb;
  ToProto(b, &pb);
  EXPECT_EQ(pb.count(), 4u);
  EXPECT_EQ(BucketFromProto(pb), b);
  pb.set_count(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(BucketFromProto(pb).count, std::numeric_limits<int64_t>::max());
}

TEST(WireWindow, LeaseInMillisecondsOwnerStaysHome) {
  Window w;
  w.id = 12;
  w.label = "bench";
  w.start_ns = 5'000'000'000;
  w.lease_ns = 30'000'000'000;
  w.owner = "uid:1000";
  v1::Window pb;
  ToProto(w, &pb);
  EXPECT_FALSE(pb.has_end_ns());  // open: absent, never 0
  EXPECT_EQ(pb.lease_ms(), 30'000u);
  Window back = WindowFromProto(pb);
  EXPECT_FALSE(back.end_ns);
  EXPECT_EQ(back.owner, "");
  back.owner = w.owner;
  EXPECT_EQ(back, w);

  w.end_ns = w.start_ns;  // ended the instant it began: an end, not absent
  w.abandoned = true;
  w.lease_ns.reset();
  pb.Clear();
  ToProto(w, &pb);
  EXPECT_TRUE(pb.has_end_ns());
  EXPECT_FALSE(pb.has_lease_ms());
  back = WindowFromProto(pb);
  back.owner = w.owner;
  EXPECT_EQ(back, w);
}

Summary FullSummary() {
  Summary s;
  s.from_ns = 1'000;
  s.to_ns = 2'001'000;
  s.duration_s = 0.002;
  s.rails.push_back({"VDD_IN", "", true, 12.5, 6250.0, 7000});
  s.rails.push_back({"VDD_CPU", "VDD_IN", false, 0.0, 0.0, std::nullopt});  // 0 is measured
  s.rails.push_back({"VDD_GPU", "VDD_IN", false, std::nullopt, 400.0, 450});
  s.temps.push_back({"cpu-thermal", 41'000, 41'000, 41'900});
  s.temps.push_back({"gpu-thermal", std::nullopt, 0, 0});  // 0 C measured, no first reading
  s.residency.push_back({"gpu", {{306'000, 0.75}, {1'300'500, 0.25}}});
  s.loads.push_back({"gpu", "gpu", 412.5, 990});
  s.loads.push_back({"engine", "nvenc", 0.0, 0});  // idle all along: measured, not missing
  s.samples = 25;
  s.gaps = 1;
  s.note = "short range: 25 frames";
  s.min_rail_rate_hz = 50;
  s.max_rail_rate_hz = 1000;
  s.requested_from_ns = 0;
  s.requested_to_ns = 9'000'000;
  s.bad_frames = 2;
  return s;
}

TEST(WireSummary, RoundTripKeepsEveryFieldAndAbsence) {
  const Summary s = FullSummary();
  v1::Summary pb;
  ToProto(s, &pb);
  ASSERT_EQ(pb.rails_size(), 3);
  EXPECT_TRUE(pb.rails(1).has_energy_mj());  // a measured 0 is sent with its presence
  EXPECT_EQ(pb.rails(1).energy_mj(), 0.0);
  EXPECT_FALSE(pb.rails(1).has_peak_power_mw());
  EXPECT_FALSE(pb.rails(2).has_energy_mj());
  ASSERT_EQ(pb.temps_size(), 2);
  EXPECT_FALSE(pb.temps(1).has_start_mc());
  EXPECT_TRUE(pb.temps(1).has_min_mc() && pb.temps(1).has_max_mc());
  ASSERT_EQ(pb.loads_size(), 2);
  EXPECT_EQ(pb.loads(1).name(), "nvenc");
  EXPECT_TRUE(pb.has_requested_from_ns());  // 0 asked for is still asked for
  EXPECT_EQ(SummaryFromProto(pb), s);

  Summary unclipped = s;
  unclipped.requested_from_ns.reset();
  unclipped.requested_to_ns.reset();
  unclipped.min_rail_rate_hz.reset();
  unclipped.max_rail_rate_hz.reset();
  pb.Clear();
  ToProto(unclipped, &pb);
  EXPECT_FALSE(pb.has_requested_from_ns() || pb.has_requested_to_ns());
  EXPECT_FALSE(pb.has_min_rail_rate_hz() || pb.has_max_rail_rate_hz());
  EXPECT_EQ(SummaryFromProto(pb), unclipped);
}

TEST(WireSummary, DecodesResidencySortedAndAbsentAsAbsent) {
  v1::Summary pb;
  pb.set_duration_s(2.5);
  pb.set_samples(25);
  auto* r = pb.add_rails();
  r->set_name("VDD_GPU_SOC");
  r->set_energy_mj(5731.6);
  r->set_peak_power_mw(2293);
  auto* res = pb.add_residency();
  res->set_name("gpu");
  (*res->mutable_khz_share())[1'300'500] = 0.25;
  (*res->mutable_khz_share())[306'000] = 0.75;
  Summary s = SummaryFromProto(pb);
  EXPECT_DOUBLE_EQ(s.duration_s, 2.5);
  EXPECT_EQ(s.samples, 25u);
  ASSERT_EQ(s.rails.size(), 1u);
  ASSERT_TRUE(s.rails[0].energy_mj);
  EXPECT_DOUBLE_EQ(*s.rails[0].energy_mj, 5731.6);
  EXPECT_FALSE(s.rails[0].avg_power_mw);  // not sent: absent, never 0
  EXPECT_EQ(s.rails[0].peak_power_mw, 2293);
  ASSERT_EQ(s.residency.size(), 1u);
  ASSERT_EQ(s.residency[0].khz_share.size(), 2u);
  EXPECT_EQ(s.residency[0].khz_share[0].first, 306'000);  // sorted by frequency
  EXPECT_DOUBLE_EQ(s.residency[0].khz_share[0].second, 0.75);
  EXPECT_FALSE(s.requested_from_ns);
  EXPECT_FALSE(s.min_rail_rate_hz);
}

TEST(ModelRange, NonEmptyEnd) {
  EXPECT_EQ(NonEmptyEnd(10, 20), 20);
  EXPECT_EQ(NonEmptyEnd(10, 11), 11);
  EXPECT_EQ(NonEmptyEnd(10, 10), 11);  // an instant measures 1 ns
  EXPECT_EQ(NonEmptyEnd(10, -5), 11);  // an end before the start
  EXPECT_EQ(NonEmptyEnd(std::numeric_limits<int64_t>::max(), 0),
            std::numeric_limits<int64_t>::max());  // saturates
  EXPECT_EQ(NonEmptyEnd(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::min() + 1);
}

}  // namespace
}  // namespace edgemon::wire
