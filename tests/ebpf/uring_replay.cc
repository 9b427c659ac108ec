// uring_replay: a small replay on the `uring` device in real time, for the eBPF tests and the
// overhead bench. It fills an object store with prefix-chained chunk objects, then serves a
// stream of requests through a Context (the Stack over UringDevice on its threaded driver,
// wall clock): each request reports a claim, and TTU later asks for retrieval (all claims due by
// then at once), waits for readiness (or reads through the ordinary path), copies the
// resident bytes as a GPU transfer would and ends the transfer. A tight protected-capacity budget
// makes some commits wait (deferrals) and some claims take the ordinary path. It prints its own
// counters as one JSON object.
//
// Usage: uring_replay DIR REQUESTS GAP_MS TTU_MS
//   DIR       a directory on a file system with O_DIRECT (the store is created there)
//   REQUESTS  requests to serve; GAP_MS between reports; TTU_MS from report to retrieval
//   GAP_MS = TTU_MS = 0 runs closed-loop: each request is retrieved as soon as it is
//   reported, one at a time, as fast as staging allows (the bench's throughput mode).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "controller/commit_policy.h"
#include "core/clock.h"
#include "stack/context.h"
#include "store/object_store.h"
#include "uring/uring_device.h"

namespace {

using tempo::ClaimId;
using tempo::kNsPerMs;
using tempo::Manifest;
using tempo::RetrievalOutcome;
using tempo::TimeNs;

constexpr uint64_t kObjectBytes = 256 * 1024;     // one 256-token chunk of a small model
constexpr uint64_t kObjects = 256;                // 64 MiB on the SSD tier
constexpr uint64_t kChunksPerRequest = 8;         // 2 MiB of KV per request
constexpr uint64_t kFastTierBytes = 16ull << 20;  // a quarter of it: staging evicts
constexpr uint64_t kBudgetBytes = 6ull << 20;     // three requests' worth: commits must wait

struct Counters {
  uint64_t requests = 0, reported = 0, ready_at_request = 0, waited = 0, ordinary = 0;
  uint64_t transfers = 0, transfer_bytes = 0, ordinary_bytes = 0, errors = 0;
};

int fail(const char* what, int err) {
  std::fprintf(stderr, "uring_replay: %s: %s\n", what, std::strerror(-err));
  return 1;
}

// Request i reads chunks [first, first + 8) of a chain; neighbours share a prefix.
Manifest manifest_of(uint64_t i) {
  Manifest m;
  const uint64_t first = (i * 37) % (kObjects - kChunksPerRequest);
  for (uint64_t k = 0; k < kChunksPerRequest; ++k) m.push_back({first + k, kObjectBytes});
  return m;
}

int fill_store(tempo::ObjectStore& store) {
  std::vector<std::byte> buf(kObjectBytes);
  for (uint64_t k = 0; k < kObjects; ++k) {
    for (size_t b = 0; b < buf.size(); ++b) buf[b] = static_cast<std::byte>((k * 131 + b) & 0xff);
    const int ret = store.put(k, buf);
    if (ret < 0 && ret != -EEXIST) return ret;
  }
  return store.sync();
}

// Retrieval is requested for every claim of `batch` first (as a scheduler admitting several
// requests at once would), then each is waited for, copied out and ended, or read through
// the ordinary path: claims that find no protected capacity at request time go ordinary.
void retrieve(tempo::Context& loop, const std::vector<ClaimId>& batch, std::vector<std::byte>& gpu,
              Counters& c) {
  std::vector<RetrievalOutcome> outcome(batch.size());
  std::vector<bool> ok(batch.size(), true);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (loop.call([&](tempo::Stack& s) { return s.request_retrieval(batch[i], &outcome[i]); }) <
        0) {
      ++c.errors;
      ok[i] = false;
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const ClaimId id = batch[i];
    RetrievalOutcome out = outcome[i];
    if (!ok[i]) continue;
    if (out == RetrievalOutcome::kWait) {
      ++c.waited;
      if (loop.wait_ready(id, 30'000 * kNsPerMs, &out) < 0) {
        ++c.errors;
        continue;
      }
    } else if (out == RetrievalOutcome::kReady) {
      ++c.ready_at_request;
    }
    if (out == RetrievalOutcome::kOrdinary) {
      ++c.ordinary;
      if (loop.ordinary_read(id) < 0) ++c.errors;
      c.ordinary_bytes += kChunksPerRequest * kObjectBytes;
      continue;
    }
    std::vector<std::span<const std::byte>> extents;
    if (loop.call([&](tempo::Stack& s) { return s.begin_transfer(id); }) < 0 ||
        loop.call([&](tempo::Stack& s) { return s.extents(id, &extents); }) < 0) {
      ++c.errors;
      continue;
    }
    uint64_t copied = 0;
    for (const auto& e : extents) {
      std::memcpy(gpu.data() + copied, e.data(), e.size());
      copied += e.size();
    }
    if (loop.call([&](tempo::Stack& s) { return s.end_transfer(id); }) < 0) ++c.errors;
    ++c.transfers;
    c.transfer_bytes += copied;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: uring_replay DIR REQUESTS GAP_MS TTU_MS\n");
    return 2;
  }
  const std::string dir = argv[1];
  const long requests = std::atol(argv[2]), gap_ms = std::atol(argv[3]),
             ttu_ms = std::atol(argv[4]);
  if (requests < 1 || gap_ms < 0 || ttu_ms < 0) {
    std::fprintf(stderr, "uring_replay: REQUESTS >= 1, GAP_MS and TTU_MS >= 0\n");
    return 2;
  }

  std::unique_ptr<tempo::ObjectStore> store;
  tempo::ObjectStoreOptions so;
  so.dir = dir;
  if (const int r = tempo::ObjectStore::open(so, &store); r < 0) return fail("store", r);
  if (const int r = fill_store(*store); r < 0) return fail("fill", r);

  tempo::MonotonicClock clock;
  tempo::UringDeviceOptions dopt;
  dopt.fast_tier.bytes = kFastTierBytes;
  dopt.fast_tier.huge_pages = false;
  std::unique_ptr<tempo::UringDevice> dev;
  std::string err;
  if (const int r = tempo::UringDevice::create(*store, dopt, clock, &dev, &err); r < 0) {
    std::fprintf(stderr, "uring_replay: device: %s\n", err.c_str());
    return 1;
  }
  tempo::StackConfig lc;
  lc.controller.policy = *tempo::parse_policy("tempo");
  lc.provider.budget_bytes = kBudgetBytes;
  lc.provider.calibration_rate_bps = 1.0 * (1ull << 30);
  std::unique_ptr<tempo::Context> loop;
  if (const int r = tempo::Context::create(*dev, lc, &loop, &err); r < 0) {
    std::fprintf(stderr, "uring_replay: context: %s\n", err.c_str());
    return 1;
  }

  Counters c;
  std::vector<std::byte> gpu(kChunksPerRequest * kObjectBytes);
  std::deque<std::pair<TimeNs, ClaimId>> due;  // retrievals, in report order
  const TimeNs start = clock.now();
  const auto sleep_until = [&](TimeNs t) {
    const TimeNs now = clock.now();
    if (t > now) std::this_thread::sleep_for(std::chrono::nanoseconds(t - now));
  };
  // Retrieves, as one batch, every claim due by `until` (after sleeping until the last).
  const auto retrieve_due = [&](TimeNs until) {
    std::vector<ClaimId> batch;
    TimeNs last = 0;
    for (; !due.empty() && due.front().first <= until; due.pop_front()) {
      batch.push_back(due.front().second);
      last = due.front().first;
    }
    if (batch.empty()) return;
    sleep_until(last);
    retrieve(*loop, batch, gpu, c);
  };
  for (long i = 0; i < requests; ++i) {
    const TimeNs report_at = start + i * gap_ms * kNsPerMs;
    retrieve_due(report_at);
    sleep_until(report_at);
    ClaimId id = 0;
    ++c.requests;
    if (loop->call([&](tempo::Stack& s) {
          return s.report(manifest_of(static_cast<uint64_t>(i)), ttu_ms * kNsPerMs, &id);
        }) < 0) {
      ++c.errors;
      continue;
    }
    ++c.reported;
    if (gap_ms == 0 && ttu_ms == 0)
      retrieve(*loop, {id}, gpu, c);
    else
      due.emplace_back(clock.now() + ttu_ms * kNsPerMs, id);
  }
  retrieve_due(std::numeric_limits<TimeNs>::max());
  const double wall_s = static_cast<double>(clock.now() - start) / 1e9;
  const tempo::StackStats all = loop->call([&](tempo::Stack& s) { return s.stats(); });
  const tempo::ControllerStats& cs = all.controller;
  const tempo::ProviderStats& ps = all.provider;
  const tempo::DeviceStats& ds = all.device_stats;
  loop.reset();

  std::printf(
      "{\"requests\":%llu,\"reported\":%llu,\"ready_at_request\":%llu,\"waited\":%llu,"
      "\"ordinary\":%llu,\"transfers\":%llu,\"transfer_bytes\":%llu,\"ordinary_bytes\":%llu,"
      "\"errors\":%llu,\"committed\":%llu,\"capacity_deferrals\":%llu,"
      "\"controller_ordinary\":%llu,\"released\":%llu,\"stage_submitted\":%llu,"
      "\"stage_completed\":%llu,\"stage_failed\":%llu,\"staged_bytes\":%llu,"
      "\"device_staged_bytes\":%llu,\"demand_bytes\":%llu,\"evictions\":%llu,"
      "\"ledger_bytes\":%llu,\"wall_s\":%.6f,\"requests_per_s\":%.3f}\n",
      (unsigned long long)c.requests, (unsigned long long)c.reported,
      (unsigned long long)c.ready_at_request, (unsigned long long)c.waited,
      (unsigned long long)c.ordinary, (unsigned long long)c.transfers,
      (unsigned long long)c.transfer_bytes, (unsigned long long)c.ordinary_bytes,
      (unsigned long long)c.errors, (unsigned long long)cs.committed,
      (unsigned long long)cs.capacity_deferrals, (unsigned long long)cs.ordinary,
      (unsigned long long)cs.released, (unsigned long long)ps.stage_submitted,
      (unsigned long long)ps.stage_completed, (unsigned long long)ps.stage_failed,
      (unsigned long long)ps.staged_bytes, (unsigned long long)ds.staged_bytes,
      (unsigned long long)ds.demand_bytes, (unsigned long long)ds.evictions,
      (unsigned long long)ps.ledger_bytes, wall_s, static_cast<double>(c.requests) / wall_s);
  return c.errors ? 1 : 0;
}
