// The TempoKV stack a replay serves through: a scheduler for timed work, a device, the
// provider and the controller. The sim stack runs in virtual time; a real-device stack
// (uring) runs on the wall clock with the device's completions on the same loop.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "controller/controller.h"
#include "core/object.h"
#include "core/scheduler.h"
#include "device/device.h"
#include "provider/provider.h"
#include "sim/sim_runtime.h"

namespace tempo {

class ServingStack {
 public:
  virtual ~ServingStack() = default;
  virtual Scheduler& scheduler() = 0;
  virtual Device& device() = 0;
  virtual Provider& provider() = 0;
  virtual Controller& controller() = 0;
  // Puts an object on the SSD tier before the run. 0, or a negative errno with *error.
  virtual int preload(const KvObject& object, std::string* error) = 0;
  // Runs timed work and device completions until `done()` holds and nothing is pending.
  virtual void run(const std::function<bool()>& done) = 0;
  // The fast-tier-to-GPU copy of a claim's resident objects (real devices move the bytes;
  // the sim device has none). Returns the bytes copied.
  virtual uint64_t copy_out(std::span<const ObjectKey> keys);
  // The ordinary path (`dax_l1`: LMCache's DAX-L1 reading through device memory), done
  // through `done(status)`. The default is the device's demand_read for both.
  virtual int read_ordinary(std::span<const ObjectKey> keys, bool dax_l1,
                            std::function<void(int)> done);
};

class SimServingStack final : public ServingStack {
 public:
  explicit SimServingStack(const SimRuntimeConfig& config) : rt_(config) {}
  Scheduler& scheduler() override { return rt_.events; }
  Device& device() override { return rt_.device; }
  Provider& provider() override { return rt_.provider; }
  Controller& controller() override { return rt_.controller; }
  int preload(const KvObject& object, std::string* error) override;
  void run(const std::function<bool()>& done) override;

 private:
  SimRuntime rt_;
};

}  // namespace tempo
