// One typed suite over every {device} x {driver} pair of a context: the same claim
// lifecycle, the same misuse, the same return codes, whatever runs below. Pairs whose
// device is absent here say SKIP (the kmod pairs run in the guest, tests/vm).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/tempo.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "../kmod/kmod_test_env.h"
#include "../store/scratch.h"
#include "stack/context.h"

namespace tempo {
namespace {

constexpr uint64_t kObjectBytes = 64 * 1024;
constexpr TimeNs kWait = 10 * kNsPerSec;

std::vector<std::byte> object_bytes(ObjectKey key) { return test::object_bytes(key, kObjectBytes); }

struct SimDeviceKind {
  static constexpr const char* kName = "sim";
  static bool has_bytes() { return false; }
};
struct UringDeviceKind {
  static constexpr const char* kName = "uring";
  static bool has_bytes() { return true; }
};
// tempo.ko's /dev/tempo0 (the guest): objects are placed on its backing disk, whose bytes
// they are.
struct KmodDeviceKind {
  static constexpr const char* kName = "kmod";
  static bool has_bytes() { return true; }
};

// The kmod device's geometry, through an fd of its own; RESET drops every unpinned extent,
// so each test starts with nothing resident.
tempo_info kmod_reset() {
  tempo_info in{};
  const int fd = open(testing::kmod_dev_path().c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_GE(fd, 0) << std::strerror(errno);
  EXPECT_EQ(ioctl(fd, TEMPO_IOC_GET_INFO, &in), 0);
  EXPECT_EQ(ioctl(fd, TEMPO_IOC_RESET, 0), 0);
  if (fd >= 0) close(fd);
  return in;
}

template <typename DeviceKind, DriverKind kDriver>
struct Pair {
  using Device = DeviceKind;
  static constexpr DriverKind kDriverKind = kDriver;
};

template <typename P>
class Lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    // Here, not in open(): a skip in SetUp skips the test's body.
    if (std::string(P::Device::kName) == "kmod") TEMPO_REQUIRE_KMOD();
    ASSERT_FALSE(dir_.path().empty());
  }
  void TearDown() override { ctx_.reset(); }  // before its store's directory goes
  // A context of this pair: budget for 4 objects, so a 5-object claim never fits.
  void open(const char* policy) {
    const bool kmod = std::string(P::Device::kName) == "kmod";
    if (kmod) {
      extent_ = kmod_reset().extent_bytes;
      ASSERT_GT(extent_, 0u);
    }
    Settings s;
    std::string err;
    const std::vector<std::pair<std::string, std::string>> kv = {
        {"device", P::Device::kName},
        {"fast_tier_bytes", "4MiB"},
        {"budget_bytes", std::to_string(4 * kObjectBytes)},
        {"policy", policy},
        {"tick", "5ms"},
        {"staging_rate", "1GiB"},
        {"calibration_rate", "1GiB"},
        {"demand_rate", "1GiB"},
        {"op_latency", "0"},
        {"uring.store_path", dir_.path() + "/store"},
        {"uring.prefault", "false"},
        {"kmod.path", testing::kmod_dev_path()}};
    for (const auto& [k, v] : kv) {
      if (k.find('.') != std::string::npos && !k.starts_with(std::string(P::Device::kName) + "."))
        continue;
      ASSERT_EQ(s.set(k, v, &err), 0) << err;
    }
    const int r = Context::create(s, &ctx_, &err, P::kDriverKind);
    if (r == -EOPNOTSUPP) GTEST_SKIP() << err;
    ASSERT_EQ(r, 0) << err;
    ASSERT_EQ(ctx_->device_kind(), P::Device::kName);
    std::vector<KvObject> objs;
    for (ObjectKey k = 1; k <= 8; ++k) objs.push_back({k, kObjectBytes});
    std::vector<ObjectPlacement> placed;
    for (const KvObject& o : objs) placed.push_back({o.key, offset(o.key), o.bytes});
    if (kmod) {
      place_kmod(placed);
    } else if (P::Device::has_bytes()) {
      for (const KvObject& o : objs) ASSERT_EQ(ctx_->store_put(o.key, object_bytes(o.key)), 0);
      EXPECT_EQ(ctx_->store_put(1, object_bytes(1)), 0);  // the same bytes: idempotent
      EXPECT_EQ(ctx_->store_put(1, object_bytes(2)), -EEXIST);
      EXPECT_EQ(ctx_->sim_add_objects(objs), -EOPNOTSUPP);
      EXPECT_EQ(ctx_->kmod_add_objects(placed), -EOPNOTSUPP);
    } else {
      ASSERT_EQ(ctx_->sim_add_objects(objs), 0);
      EXPECT_EQ(ctx_->sim_add_objects(objs), -EEXIST);
      EXPECT_EQ(ctx_->store_put(1, object_bytes(1)), -EOPNOTSUPP);
      EXPECT_EQ(ctx_->kmod_add_objects(placed), -EOPNOTSUPP);
    }
  }
  // The kmod device's placements: every bad batch is refused whole, then all eight go in.
  void place_kmod(const std::vector<ObjectPlacement>& placed) {
    const std::vector<KvObject> objs = {{1, kObjectBytes}};
    EXPECT_EQ(ctx_->sim_add_objects(objs), -EOPNOTSUPP);
    EXPECT_EQ(ctx_->store_put(1, object_bytes(1)), -EOPNOTSUPP);
    const ObjectPlacement good = placed[0];
    const std::vector<std::vector<ObjectPlacement>> bad = {
        {good, {99, offset(99) + 4096, kObjectBytes}},  // not extent-aligned
        {good, {99, offset(99), 0}},                    // no bytes
        {good, {99, uint64_t{1} << 62, kObjectBytes}},  // beyond the device
        {good, good},                                   // the same key twice
        {good, {99, good.offset, kObjectBytes}},        // shares good's extent
    };
    const int want[] = {-EINVAL, -EINVAL, -ERANGE, -EEXIST, -EBUSY};
    for (size_t i = 0; i < bad.size(); ++i) {
      EXPECT_EQ(ctx_->kmod_add_objects(bad[i]), want[i]) << "batch " << i;
      EXPECT_EQ(on([](Stack& s) { return s.object_size(1); }), -ENOENT) << "batch " << i;
    }
    ASSERT_EQ(ctx_->kmod_add_objects(placed), 0);
    EXPECT_EQ(ctx_->kmod_add_objects(std::span(placed).first(1)), -EEXIST);
  }
  // Object k's place on the kmod device: the k-th extent (of at least kObjectBytes).
  uint64_t offset(ObjectKey k) const { return k * std::max<uint64_t>(extent_, kObjectBytes); }
  // The bytes object k holds: on kmod, its disk's at its place.
  std::vector<std::byte> want_bytes(ObjectKey k) const {
    if (std::string(P::Device::kName) != "kmod") return object_bytes(k);
    std::vector<std::byte> v(kObjectBytes);
    const std::string disk = testing::kmod_disk_path();
    const int fd = ::open(disk.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << "TEMPO_KMOD_DISK '" << disk << "': " << std::strerror(errno);
    if (fd < 0) return {};
    EXPECT_EQ(pread(fd, v.data(), v.size(), static_cast<off_t>(offset(k))),
              static_cast<ssize_t>(v.size()));
    close(fd);
    return v;
  }
  static Manifest objects(ObjectKey first, ObjectKey n) {
    Manifest m;
    for (ObjectKey k = first; k < first + n; ++k) m.push_back({k, kObjectBytes});
    return m;
  }
  ClaimId report(const Manifest& m, TimeNs ttu) {
    ClaimId id = 0;
    EXPECT_EQ(on([&](Stack& s) { return s.report(m, ttu, &id); }), 0);
    return id;
  }
  template <typename F>
  auto on(F&& f) {
    return ctx_->call(f);
  }
  ClaimState state(ClaimId id) {
    ClaimView v;
    EXPECT_EQ(on([&](Stack& s) { return s.query(id, &v); }), 0);
    return v.state;
  }
  // Request retrieval and wait until the claim is stage-ready.
  void make_ready(ClaimId id) {
    RetrievalOutcome out{};
    ASSERT_EQ(on([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
    ASSERT_NE(out, RetrievalOutcome::kOrdinary);
    ASSERT_EQ(ctx_->wait_ready(id, kWait, &out), 0);
    ASSERT_EQ(out, RetrievalOutcome::kReady);
    ASSERT_EQ(state(id), ClaimState::kStageReady);
  }

  test::ScratchDir dir_;  // in the build directory: a real file system
  std::unique_ptr<Context> ctx_;
  uint64_t extent_ = 0;  // the kmod device's
};

using Pairs = ::testing::Types<
    Pair<SimDeviceKind, DriverKind::kVirtual>, Pair<SimDeviceKind, DriverKind::kThreaded>,
    Pair<UringDeviceKind, DriverKind::kVirtual>, Pair<UringDeviceKind, DriverKind::kThreaded>,
    Pair<KmodDeviceKind, DriverKind::kVirtual>, Pair<KmodDeviceKind, DriverKind::kThreaded>>;

class PairNames {
 public:
  template <typename P>
  static std::string GetName(int) {
    return std::string(P::Device::kName) +
           (P::kDriverKind == DriverKind::kVirtual ? "_virtual" : "_threaded");
  }
};
TYPED_TEST_SUITE(Lifecycle, Pairs, PairNames);

TYPED_TEST(Lifecycle, ReportRevisesOrdersStagesTransfersAndReleases) {
  this->open("demand");
  const ClaimId id = this->report(this->objects(1, 3), 60 * kNsPerSec);
  EXPECT_EQ(this->state(id), ClaimState::kPlanned);
  EXPECT_EQ(this->on([&](Stack& s) { return s.revise(id, 30 * kNsPerSec); }), 0);
  const ClaimId order[] = {kNoClaim, id};
  EXPECT_EQ(this->on([&](Stack& s) { return s.update_order(order); }), 0);
  EXPECT_EQ(this->on([&](Stack& s) { return s.begin_transfer(id); }), -EINVAL);  // PLANNED
  this->make_ready(id);
  std::vector<std::span<const std::byte>> ext;
  EXPECT_EQ(this->on([&](Stack& s) { return s.extents(id, &ext); }), -EINVAL);  // not yet
  ASSERT_EQ(this->on([&](Stack& s) { return s.begin_transfer(id); }), 0);
  EXPECT_EQ(this->state(id), ClaimState::kTransferring);
  const int r = this->on([&](Stack& s) { return s.extents(id, &ext); });
  if (TypeParam::Device::has_bytes()) {
    ASSERT_EQ(r, 0);
    std::vector<std::byte> got, want;
    for (auto e : ext) got.insert(got.end(), e.begin(), e.end());
    for (ObjectKey k = 1; k <= 3; ++k) {
      const auto b = this->want_bytes(k);
      want.insert(want.end(), b.begin(), b.end());
    }
    EXPECT_EQ(got, want);
  } else {
    EXPECT_EQ(r, -EOPNOTSUPP);
  }
  ASSERT_EQ(this->on([&](Stack& s) { return s.end_transfer(id); }), 0);
  EXPECT_EQ(this->state(id), ClaimState::kReleased);
  // An ended claim refuses everything but queries, with the same codes on every pair.
  RetrievalOutcome out{};
  EXPECT_EQ(this->on([&](Stack& s) { return s.end_transfer(id); }), -EINVAL);
  EXPECT_EQ(this->on([&](Stack& s) { return s.revise(id, 0); }), -EINVAL);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(id); }), -EINVAL);
  EXPECT_EQ(this->on([&](Stack& s) { return s.request_retrieval(id, &out); }), -EINVAL);
  EXPECT_EQ(this->ctx_->wait_ready(id, kWait, &out), -ECANCELED);
  EXPECT_EQ(this->ctx_->ordinary_read(id), -EINVAL);
  const StackStats st = this->on([](Stack& s) { return s.stats(); });
  EXPECT_EQ(st.controller.released, 1u);
  EXPECT_EQ(st.provider.ledger_bytes, 0u);
  EXPECT_EQ(st.device_stats.pins, 0u);
}

TYPED_TEST(Lifecycle, CancelInEveryState) {
  this->open("demand");
  RetrievalOutcome out{};
  // PLANNED: at once.
  const ClaimId planned = this->report(this->objects(1, 2), 60 * kNsPerSec);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(planned); }), 0);
  EXPECT_EQ(this->state(planned), ClaimState::kCancelled);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(planned); }), -EINVAL);
  EXPECT_EQ(this->ctx_->wait_ready(planned, kWait, &out), -ECANCELED);
  // STAGE_READY: at once, protection released.
  const ClaimId ready = this->report(this->objects(3, 2), 60 * kNsPerSec);
  this->make_ready(ready);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(ready); }), 0);
  EXPECT_EQ(this->state(ready), ClaimState::kCancelled);
  // TRANSFERRING: cancel pending until the transfer ends.
  const ClaimId moving = this->report(this->objects(5, 2), 60 * kNsPerSec);
  this->make_ready(moving);
  ASSERT_EQ(this->on([&](Stack& s) { return s.begin_transfer(moving); }), 0);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(moving); }), 0);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(moving); }), -EALREADY);
  ClaimView v;
  ASSERT_EQ(this->on([&](Stack& s) { return s.query(moving, &v); }), 0);
  EXPECT_EQ(v.state, ClaimState::kTransferring);
  EXPECT_TRUE(v.cancel_pending);
  ASSERT_EQ(this->on([&](Stack& s) { return s.end_transfer(moving); }), 0);
  EXPECT_EQ(this->state(moving), ClaimState::kCancelled);
  const StackStats st = this->on([](Stack& s) { return s.stats(); });
  EXPECT_EQ(st.controller.cancelled, 3u);
  EXPECT_EQ(st.controller.live, 0u);
  EXPECT_EQ(st.provider.ledger_bytes, 0u);
  EXPECT_EQ(st.device_stats.pins, 0u);
}

TYPED_TEST(Lifecycle, ClaimThatNeverFitsTakesTheOrdinaryPathOnce) {
  this->open("immediate");
  const ClaimId id = this->report(this->objects(1, 5), 0);  // 5 objects, budget for 4
  RetrievalOutcome out{};
  ASSERT_EQ(this->on([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
  EXPECT_EQ(out, RetrievalOutcome::kOrdinary);
  EXPECT_EQ(this->state(id), ClaimState::kOrdinary);
  EXPECT_EQ(this->ctx_->wait_ready(id, kWait, &out), 0);
  EXPECT_EQ(out, RetrievalOutcome::kOrdinary);
  EXPECT_EQ(this->on([&](Stack& s) { return s.begin_transfer(id); }), -EINVAL);
  EXPECT_EQ(this->ctx_->ordinary_read(id), 0);
  EXPECT_EQ(this->ctx_->ordinary_read(id), -EINVAL);  // read once
  const StackStats st = this->on([](Stack& s) { return s.stats(); });
  EXPECT_EQ(st.controller.ordinary, 1u);
  EXPECT_GE(st.controller.capacity_deferrals, 1u);
  EXPECT_EQ(st.device_stats.demand_bytes, 5 * kObjectBytes);
}

TYPED_TEST(Lifecycle, ObjectsTheTierDoesNotHoldFailTheClaim) {
  this->open("demand");
  const ClaimId id = this->report(Manifest{{4242, kObjectBytes}}, 0);
  RetrievalOutcome out{};
  EXPECT_EQ(this->on([&](Stack& s) { return s.request_retrieval(id, &out); }), -ENOENT);
  ClaimView v;
  ASSERT_EQ(this->on([&](Stack& s) { return s.query(id, &v); }), 0);
  EXPECT_EQ(v.state, ClaimState::kFailed);
  EXPECT_EQ(v.error, -ENOENT);
  EXPECT_EQ(this->ctx_->wait_ready(id, kWait, &out), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.object_size(4242); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.object_size(1); }),
            static_cast<int64_t>(kObjectBytes));
}

TYPED_TEST(Lifecycle, MisuseGetsTheSameCodesEverywhere) {
  this->open("demand");
  ClaimId id = 0;
  EXPECT_EQ(this->on([&](Stack& s) { return s.report(Manifest{}, 0, &id); }), -EINVAL);
  EXPECT_EQ(this->on([&](Stack& s) { return s.report(Manifest{{1, 0}}, 0, &id); }), -EINVAL);
  constexpr ClaimId kUnknown = 999;
  RetrievalOutcome out{};
  ClaimView v;
  std::vector<std::span<const std::byte>> ext;
  EXPECT_EQ(this->on([&](Stack& s) { return s.revise(kUnknown, 0); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.cancel(kUnknown); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.request_retrieval(kUnknown, &out); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.begin_transfer(kUnknown); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.end_transfer(kUnknown); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.query(kUnknown, &v); }), -ENOENT);
  EXPECT_EQ(this->on([&](Stack& s) { return s.extents(kUnknown, &ext); }), -ENOENT);
  EXPECT_EQ(this->ctx_->wait_ready(kUnknown, kWait, &out), -ENOENT);
  EXPECT_EQ(this->ctx_->ordinary_read(kUnknown), -ENOENT);
  const ClaimId never[] = {kUnknown};
  EXPECT_EQ(this->on([&](Stack& s) { return s.update_order(never); }), -ENOENT);
  // A PLANNED claim under `demand` waits for its retrieval request: the wait times out.
  const ClaimId planned = this->report(this->objects(1, 1), 0);
  EXPECT_EQ(this->ctx_->wait_ready(planned, -1, &out), -EINVAL);
  EXPECT_EQ(this->ctx_->wait_ready(planned, 20 * kNsPerMs, &out), -ETIMEDOUT);
  EXPECT_EQ(this->ctx_->ordinary_read(planned), -EINVAL);
  EXPECT_EQ(this->on([&](Stack& s) { return s.end_transfer(planned); }), -EINVAL);
}

}  // namespace
}  // namespace tempo
