// The runtime on a wall clock: the controller and provider over a uring device, driven by an
// event loop on its own thread. The loop waits (epoll) on three descriptors: an eventfd for
// calls posted by other threads, a timerfd for the controller's periodic tick (50 ms by
// default, armed while claims are planned) and the device's completion eventfd.
//
// Threading: the public API is thread-safe. Each call runs on the loop thread (the controller
// and provider are single-threaded by design) and the caller waits for its result; calls
// made from inside the loop thread (observer callbacks) run directly.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "controller/controller.h"
#include "core/clock.h"
#include "provider/provider.h"
#include "uring/uring_device.h"

namespace tempo {

struct RuntimeLoopConfig {
  ControllerConfig controller;
  ProviderConfig provider;
};

// The accounting as seen from the loop thread between events; in a healthy runtime
// ledger == recount <= budget, and the device's pins are exactly the provider's.
struct LoopAccounting {
  uint64_t ledger_bytes = 0;
  uint64_t recounted_ledger_bytes = 0;  // the ledger recomputed from per-object state
  uint64_t budget_bytes = 0;
  uint64_t provider_pins = 0;  // pins the provider believes it holds
  uint64_t device_pins = 0;    // pins the device counts
};

class RuntimeLoop final : private ControllerObserver {
 public:
  // `device` outlives the loop. 0, or a negative errno with `error` saying why.
  static int create(UringDevice& device, const RuntimeLoopConfig& config,
                    std::unique_ptr<RuntimeLoop>* out, std::string* error);
  // Stops the loop thread; claims still live are left as they are, and the provider's pins
  // go with it (destroy the device after the loop).
  ~RuntimeLoop() override;
  RuntimeLoop(const RuntimeLoop&) = delete;
  RuntimeLoop& operator=(const RuntimeLoop&) = delete;

  // The controller's API (see controller/controller.h), callable from any thread.
  int report(const Manifest& manifest, TimeNs ttu, ClaimId* id);
  int revise(ClaimId id, TimeNs ttu);
  int update_order(std::span<const ClaimId> order);
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome);
  int begin_transfer(ClaimId id);
  int end_transfer(ClaimId id);
  int cancel(ClaimId id);

  // Blocks the caller until a claim that asked for retrieval is stage-ready (kReady) or
  // went to the ordinary path (kOrdinary). -ETIMEDOUT, -ENOENT, or -ECANCELED / the claim's
  // error when it ended otherwise.
  int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome);
  // Retrieval of a TRANSFERRING claim: the resident extents (pointer, length) of its
  // objects in manifest order, for the caller to copy before end_transfer(). -EINVAL when
  // the claim is not transferring, -ENOENT unknown.
  int retrieval_extents(ClaimId id, std::vector<std::span<const std::byte>>* out);
  // The ordinary path for a claim that took it: reads its objects through the device's
  // demand path; returns when they are read (0 or the read's error). -EINVAL when the claim
  // is not ORDINARY, -EDEADLK on the loop thread.
  int ordinary_read(ClaimId id);

  // Runs `fn` on the loop thread and waits (tests check invariants this way).
  void run_sync(const std::function<void()>& fn);
  LoopAccounting accounting();
  ControllerStats controller_stats();
  ProviderStats provider_stats();
  uint64_t ticks() const;

 private:
  RuntimeLoop(UringDevice& device, const RuntimeLoopConfig& config);
  void loop();
  void post(std::function<void()> fn);
  template <typename F>
  auto call(F&& fn) -> decltype(fn());
  void arm_tick();
  void on_tick();
  void notify();
  // ControllerObserver (loop thread)
  void on_claim_ready(ClaimId id) override;
  void on_claim_ordinary(ClaimId id) override;

  UringDevice& device_;
  MonotonicClock clock_;
  RuntimeLoopConfig config_;
  std::unique_ptr<Provider> provider_;                             // loop thread only
  std::unique_ptr<Controller> controller_;                         // loop thread only
  std::unordered_map<ClaimId, std::vector<ObjectKey>> manifests_;  // loop thread only
  bool tick_armed_ = false;                                        // loop thread only

  int epoll_fd_ = -1;
  int task_fd_ = -1;
  int timer_fd_ = -1;
  std::thread thread_;
  std::thread::id loop_id_;

  mutable std::mutex mu_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  uint64_t ticks_ = 0;                       // guarded by mu_
  uint64_t generation_ = 0;                  // bumped on every claim outcome; guarded by mu_
  std::condition_variable changed_;
};

}  // namespace tempo
