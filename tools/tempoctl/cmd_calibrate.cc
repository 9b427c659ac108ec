// tempoctl calibrate: the uring device's staging and demand-read rates on a store, written as
// the calibration file libtempo starts from (calibration_rate, static_rate, demand_rate).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cli.h"
#include "config/settings.h"
#include "core/clock.h"
#include "store/object_store.h"
#include "uring/uring_device.h"

namespace tempo::ctl {
namespace {

// Keys of the test objects written when the store holds too few: removed afterwards.
constexpr ObjectKey kProbeKeyBase = 0x7e3b0ca100000000ull;

struct Counter : DeviceObserver {
  void on_stage_complete(const StageCompletion& c) override {
    std::lock_guard lock(mu);
    ++done;
    if (c.status < 0) ++errors;
    last = std::max(last, c.completed);
  }
  void on_resident(ObjectKey) override {}
  void on_evicted(ObjectKey) override {}
  std::mutex mu;
  uint64_t done = 0, errors = 0;
  TimeNs last = 0;
};

// Test objects are built in memory before they are written: 1 GiB each at most. A rate
// measured on less than 1 MiB in all is mostly per-call overhead, not the device's.
constexpr int64_t kMaxObjectBytes = int64_t{1} << 30;
constexpr uint64_t kMinMeasuredBytes = uint64_t{1} << 20;

// A positive byte count (256MiB) or count, at most `max`, or -1 with *error.
int64_t number(const Args& args, const char* name, const char* fallback, bool bytes, int64_t max,
               std::string* error) {
  const std::string v = args.get(name, fallback);
  if (!bytes) {
    uint32_t n = 0;
    return cli::to_u32(name, v, 1, static_cast<uint32_t>(max), &n, error) == 0 ? n : -1;
  }
  const int64_t n = parse_bytes(v);
  if (n <= 0 || n > max) {
    *error = "invalid value '" + v + "' for '--" + name + "': accepted a positive byte count " +
             "such as 256MiB, at most " + human_bytes(double(max));
    return -1;
  }
  return n;
}

bool write_to(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

// Writes `text` to `path`. A file (or a new one) is written through a temporary file renamed
// over it, so a failed write leaves the calibration that was there; anything else (a pipe,
// /dev/stdout) is written in place.
bool write_whole(const std::string& path, const std::string& text) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    return write_to(path, text);
  const std::string tmp = path + ".tmp";
  if (write_to(tmp, text) && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  std::remove(tmp.c_str());
  return false;
}

}  // namespace

int cmd_calibrate(const Args& args) {
  const std::string dir = args.get("store");
  if (dir.empty()) return fail("calibrate", "--store=<dir> is needed");
  std::string error;
  const int64_t fast = number(args, "fast-tier-bytes", "256MiB", true, INT64_MAX, &error);
  const int64_t want = number(args, "objects", "32", false, UINT32_MAX, &error);
  const int64_t obj_bytes = number(args, "object-bytes", "4MiB", true, kMaxObjectBytes, &error);
  const int64_t qd = number(args, "queue-depth", "16", false, kMaxUringQueueDepth, &error);
  if (!error.empty()) return cli::usage_error("tempoctl calibrate", error);
  const std::string output = args.get("output", dir + "/calibration.conf");

  ObjectStoreOptions so;
  so.dir = dir;
  std::filesystem::create_directories(dir);
  std::unique_ptr<ObjectStore> store;
  if (const int r = ObjectStore::open(so, &store); r != 0)
    return fail("calibrate", "cannot open the store '" + dir + "': " + std::strerror(-r));

  // The measured set must fit the fast tier (90%: the arena rounds each object up).
  const uint64_t room = static_cast<uint64_t>(fast) / 10 * 9;
  std::vector<ObjectKey> keys;
  uint64_t total = 0;
  for (const ObjectInfo& i : store->list()) {
    if (static_cast<int64_t>(keys.size()) >= want || total + i.size > room) break;
    keys.push_back(i.key);
    total += i.size;
  }
  std::vector<ObjectKey> probes;
  for (ObjectKey k = kProbeKeyBase;
       static_cast<int64_t>(keys.size()) < want && total + static_cast<uint64_t>(obj_bytes) <= room;
       ++k) {
    if (store->lookup(k)) continue;
    std::vector<std::byte> data(static_cast<size_t>(obj_bytes));
    for (size_t j = 0; j < data.size(); j += 8) data[j] = static_cast<std::byte>((k + j) * 131);
    if (const int r = store->put(k, data); r != 0) {
      for (ObjectKey p : probes) store->remove(p);
      return fail("calibrate", std::string("writing test objects: ") + std::strerror(-r));
    }
    probes.push_back(k);
    keys.push_back(k);
    total += static_cast<uint64_t>(obj_bytes);
  }
  auto cleanup = [&] {
    for (ObjectKey p : probes) store->remove(p);
  };
  if (keys.empty()) {
    cleanup();
    return fail("calibrate", "no object fits a " + human_bytes(double(fast)) + " fast tier");
  }
  if (total < kMinMeasuredBytes) {
    cleanup();
    return fail("calibrate", "too little to measure a rate on: " + human_bytes(double(total)) +
                                 " in " + std::to_string(keys.size()) +
                                 " objects (at least 1 MiB: more or larger objects)");
  }

  MonotonicClock clock;
  UringDeviceOptions dopt;
  dopt.fast_tier.bytes = static_cast<uint64_t>(fast);
  dopt.queue_depth = static_cast<uint32_t>(qd);
  std::unique_ptr<UringDevice> dev;
  if (const int r = UringDevice::create(*store, dopt, clock, &dev, &error); r != 0) {
    cleanup();
    return fail("calibrate", "uring device: " + error);
  }
  Counter counter;
  dev->set_observer(&counter);

  // Staging: every object SSD -> fast tier at once, FIFO at the queue depth.
  const TimeNs t0 = clock.now();
  for (ObjectKey k : keys) dev->stage(k);
  const TimeNs deadline = t0 + 300 * kNsPerSec;
  auto staged = [&] {
    std::lock_guard lock(counter.mu);
    return counter.done == keys.size();
  };
  while (!staged() && clock.now() < deadline) dev->wait(10 * kNsPerMs);
  if (!staged() || counter.errors > 0) {
    dev.reset();
    cleanup();
    return fail("calibrate",
                "staging did not complete (" + std::to_string(counter.errors) + " errors)");
  }
  const double staging_rate = double(total) / (double(counter.last - t0) / 1e9);
  for (ObjectKey k : keys) dev->unpin(k);
  dev->drop_unpinned();

  // The ordinary path: the same objects read on demand through bounce buffers.
  bool done = false;
  int status = 0;
  const TimeNs t1 = clock.now();
  dev->demand_read(keys, [&](int s) {
    done = true;
    status = s;
  });
  while (!done && clock.now() < deadline + 300 * kNsPerSec) dev->wait(10 * kNsPerMs);
  const TimeNs t2 = clock.now();
  const bool direct = store->direct_io();
  dev.reset();
  cleanup();
  if (!done || status < 0)
    return fail("calibrate", std::string("demand reads failed: ") + std::strerror(-status));
  const double demand_rate = double(total) / (double(t2 - t1) / 1e9);

  const auto staging_bps = static_cast<uint64_t>(staging_rate);
  const auto demand_bps = static_cast<uint64_t>(demand_rate);
  std::ostringstream out;
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  out << "# tempoctl calibrate, " << when << ": store " << dir << ", " << keys.size()
      << " objects, " << total << " bytes, queue depth " << qd
      << (direct ? ", O_DIRECT" : ", buffered (the file system refused O_DIRECT)") << "\n"
      << "# staging " << human_bytes(staging_rate) << "/s, demand reads "
      << human_bytes(demand_rate) << "/s\n"
      << "calibration_rate = " << staging_bps << "\n"
      << "static_rate = " << staging_bps << "\n"
      << "demand_rate = " << demand_bps << "\n";
  if (!write_whole(output, out.str())) return fail("calibrate", "cannot write '" + output + "'");
  if (args.has("json")) {
    print_json({{"store", dir},
                {"objects", keys.size()},
                {"bytes", total},
                {"test_objects", probes.size()},
                {"queue_depth", qd},
                {"direct_io", direct},
                {"staging_rate_bps", staging_bps},
                {"demand_rate_bps", demand_bps},
                {"output", output}});
  } else {
    std::printf("measured %zu objects (%s) on %s%s\n", keys.size(),
                human_bytes(double(total)).c_str(), dir.c_str(),
                direct ? "" : " (buffered: O_DIRECT refused)");
    std::printf("staging rate   %s/s\n", human_bytes(staging_rate).c_str());
    std::printf("demand rate    %s/s\n", human_bytes(demand_rate).c_str());
    std::printf("wrote %s (use: calibration_file = %s)\n", output.c_str(), output.c_str());
  }
  return 0;
}

}  // namespace tempo::ctl
