// tempo-uring-bench: the measurements behind scripts/bench/uring_vs_fio.sh.
//
//   prepare --dir D --bytes N --object-bytes M   fill a store with N bytes of M-byte objects
//   stage   --dir D [--qd Q] [--request R] [--fast-bytes F] [--window W] [--no-register]
//           [--no-verify] [--no-huge] [--second-pass]
//                                                stage every object once, FIFO, W in flight;
//                                                --second-pass verifies instead as
//                                                the device did before issue 11: portable XXH3
//                                                over each staged object once it is complete

//   copy    --dir D [--fast-bytes F] [--rounds K] retrieval copy vs plain memcpy
//
// Each command prints one JSON object on stdout. Sizes take K, M, G suffixes (binary).
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <xxhash.h>

#include "core/clock.h"
#include "store/aligned_buffer.h"
#include "uring/uring_device.h"

namespace tempo {
namespace {

struct Args {
  std::string cmd;
  std::map<std::string, std::string> kv;
  uint64_t size(const std::string& k, uint64_t def) const {
    auto it = kv.find(k);
    if (it == kv.end()) return def;
    char* end = nullptr;
    uint64_t v = std::strtoull(it->second.c_str(), &end, 10);
    switch (*end) {
      case 'K':
        return v << 10;
      case 'M':
        return v << 20;
      case 'G':
        return v << 30;
      default:
        return v;
    }
  }
  bool flag(const std::string& k) const { return kv.contains(k); }
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int open_store(const Args& a, std::unique_ptr<ObjectStore>* s) {
  ObjectStoreOptions o;
  o.dir = a.kv.at("dir");
  o.request_bytes = 4u << 20;
  int ret = ObjectStore::open(o, s);
  if (ret < 0) std::fprintf(stderr, "open store %s: %s\n", o.dir.c_str(), std::strerror(-ret));
  return ret;
}

int prepare(const Args& a) {
  std::unique_ptr<ObjectStore> s;
  if (open_store(a, &s) < 0) return 1;
  const uint64_t total = a.size("bytes", 4ull << 30);
  const uint64_t obj = a.size("object-bytes", 32ull << 20);
  std::vector<std::byte> buf(obj);
  uint64_t x = 88172645463325252ULL;
  for (auto& b : buf) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  for (uint64_t k = 0; k * obj < total; ++k) {
    std::memcpy(buf.data(), &k, sizeof(k));  // distinct contents, distinct checksums
    int ret = s->put(k, buf);
    if (ret < 0) {
      std::fprintf(stderr, "put %llu: %s\n", static_cast<unsigned long long>(k),
                   std::strerror(-ret));
      return 1;
    }
  }
  if (s->sync() < 0) return 1;
  std::printf("{\"objects\":%zu,\"bytes\":%llu}\n", s->size(),
              static_cast<unsigned long long>(s->size() * obj));
  return 0;
}

UringDeviceOptions device_options(const Args& a) {
  UringDeviceOptions o;
  o.fast_tier.bytes = a.size("fast-bytes", 1ull << 30);
  o.queue_depth = static_cast<uint32_t>(a.size("qd", 16));
  o.request_bytes = static_cast<uint32_t>(a.size("request", 4u << 20));
  o.register_buffers = !a.flag("no-register");
  o.fast_tier.huge_pages = !a.flag("no-huge");
  o.verify_checksums = !a.flag("no-verify") && !a.flag("second-pass");
  return o;
}

// Counts completions; the bench unpins each staged object at once so later stages can
// evict it, as a steady stream of claims released after retrieval would. With
// `second_pass`, first hashes the staged object's extents and compares the catalog's
// checksum, as the device's verification did before it moved into the completion path.
class Counter : public DeviceObserver {
 public:
  Counter(UringDevice*& dev, const std::map<ObjectKey, uint64_t>* second_pass)
      : dev_(dev), second_pass_(second_pass) {}
  void on_stage_complete(const StageCompletion& c) override {
    ++done;
    if (c.status < 0) {
      ++errors;
      return;
    }
    if (second_pass_ && second_pass(c.key) != second_pass_->at(c.key)) ++errors;
    dev_->unpin(c.key);
  }
  void on_resident(ObjectKey) override {}
  void on_evicted(ObjectKey) override {}
  uint64_t done = 0;
  uint64_t errors = 0;

 private:
  uint64_t second_pass(ObjectKey key) {
    std::vector<std::span<const std::byte>> extents;
    if (dev_->resident_extents(key, &extents) != 0) return 0;
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    for (const auto& e : extents) XXH3_64bits_update(st, e.data(), e.size());
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
  }
  UringDevice*& dev_;
  const std::map<ObjectKey, uint64_t>* second_pass_;
};

int stage(const Args& a) {
  std::unique_ptr<ObjectStore> s;
  if (open_store(a, &s) < 0) return 1;
  MonotonicClock clock;
  std::unique_ptr<UringDevice> dev;
  std::string err;
  int ret = UringDevice::create(*s, device_options(a), clock, &dev, &err);
  if (ret < 0) {
    std::fprintf(stderr, "device: %s\n", err.c_str());
    return 1;
  }
  const auto objects = s->list();
  std::map<ObjectKey, uint64_t> checksums;
  for (const auto& o : objects) checksums[o.key] = o.checksum;
  UringDevice* raw = dev.get();
  Counter counter(raw, a.flag("second-pass") ? &checksums : nullptr);
  dev->set_observer(&counter);
  const uint64_t window = a.size("window", 8);
  uint64_t bytes = 0;
  for (const auto& o : objects) bytes += o.size;

  const double cpu0 = cpu_seconds();
  const TimeNs t0 = clock.now();
  size_t next = 0;
  while (counter.done < objects.size()) {
    while (next < objects.size() && next - counter.done < window) {
      ret = dev->stage(objects[next].key);
      if (ret < 0) {
        std::fprintf(stderr, "stage: %s\n", std::strerror(-ret));
        return 1;
      }
      ++next;
    }
    dev->wait(100 * kNsPerMs);
  }
  const double secs = ns_to_sec(clock.now() - t0);
  const double cpu = cpu_seconds() - cpu0;
  const UringDeviceStats us = dev->uring_stats();
  std::printf(
      "{\"bytes\":%llu,\"seconds\":%.4f,\"gbps\":%.4f,\"cpu_s\":%.4f,\"cpu_s_per_gb\":%.5f,"
      "\"errors\":%llu,\"requests\":%llu,\"registered\":%s,\"verify\":\"%s\"}\n",
      static_cast<unsigned long long>(bytes), secs, static_cast<double>(bytes) / secs / 1e9, cpu,
      cpu / (static_cast<double>(bytes) / 1e9), static_cast<unsigned long long>(counter.errors),
      static_cast<unsigned long long>(us.requests), us.registered_buffers ? "true" : "false",
      a.flag("second-pass") ? "second-pass"
      : a.flag("no-verify") ? "none"
                            : "completion-path");
  return counter.errors == 0 ? 0 : 1;
}

int copy(const Args& a) {
  std::unique_ptr<ObjectStore> s;
  if (open_store(a, &s) < 0) return 1;
  MonotonicClock clock;
  std::unique_ptr<UringDevice> dev;
  std::string err;
  UringDeviceOptions o = device_options(a);
  if (UringDevice::create(*s, o, clock, &dev, &err) < 0) {
    std::fprintf(stderr, "device: %s\n", err.c_str());
    return 1;
  }
  // Stage what fits in half the fast tier and keep it pinned, as stage-ready claims are.
  std::vector<ObjectInfo> objs;
  uint64_t bytes = 0;
  for (const auto& info : s->list()) {
    if (bytes + info.size > o.fast_tier.bytes / 2) break;
    if (dev->stage(info.key) < 0) return 1;
    objs.push_back(info);
    bytes += info.size;
  }
  while (!dev->idle()) dev->wait(100 * kNsPerMs);
  uint64_t largest = 0;
  for (const auto& info : objs) largest = std::max(largest, info.size);
  AlignedBuffer dst = make_aligned_buffer(largest);
  AlignedBuffer src = make_aligned_buffer(bytes);
  std::memset(dst.get(), 1, largest);
  std::memset(src.get(), 2, bytes);
  const int rounds = static_cast<int>(a.size("rounds", 5));

  // Retrieval: resident extents of each pinned object, copied out.
  std::vector<std::span<const std::byte>> ext;
  TimeNs t0 = clock.now();
  for (int r = 0; r < rounds; ++r) {
    for (const auto& info : objs) {
      if (dev->resident_extents(info.key, &ext) < 0) return 1;
      std::byte* out = dst.get();
      for (auto e : ext) {
        std::memcpy(out, e.data(), e.size());
        out += e.size();
      }
    }
  }
  const double retrieval = static_cast<double>(bytes) * rounds / ns_to_sec(clock.now() - t0);
  // Baseline: plain memcpy of the same sizes from an ordinary buffer of the same total size
  // (so neither side copies from cache more than the other).
  t0 = clock.now();
  for (int r = 0; r < rounds; ++r) {
    uint64_t at = 0;
    for (const auto& info : objs) {
      std::memcpy(dst.get(), src.get() + at, info.size);
      at += info.size;
    }
  }
  const double plain = static_cast<double>(bytes) * rounds / ns_to_sec(clock.now() - t0);
  std::printf(
      "{\"bytes\":%llu,\"objects\":%zu,\"retrieval_gbps\":%.4f,\"memcpy_gbps\":%.4f,"
      "\"ratio\":%.4f}\n",
      static_cast<unsigned long long>(bytes), objs.size(), retrieval / 1e9, plain / 1e9,
      retrieval / plain);
  return 0;
}

}  // namespace
}  // namespace tempo

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tempo-uring-bench prepare|stage|copy --dir DIR [options]\n");
    return 2;
  }
  tempo::Args a;
  a.cmd = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      std::fprintf(stderr, "unexpected argument %s\n", argv[i]);
      return 2;
    }
    k = k.substr(2);
    if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0)
      a.kv[k] = argv[++i];
    else
      a.kv[k] = "1";
  }
  if (!a.kv.contains("dir")) {
    std::fprintf(stderr, "--dir is required\n");
    return 2;
  }
  if (a.cmd == "prepare") return tempo::prepare(a);
  if (a.cmd == "stage") return tempo::stage(a);
  if (a.cmd == "copy") return tempo::copy(a);
  std::fprintf(stderr, "unknown command %s\n", a.cmd.c_str());
  return 2;
}
