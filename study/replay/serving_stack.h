// The TempoKV stack a replay serves through: a Stack (stack/stack.h) on its driver, plus
// what only a replay needs around it: putting the workload's objects on the SSD tier,
// running to the end, copying transferred bytes out, and the dax-l1 baseline that reads
// the device without the controller. The engine drives libtempo only through the claim
// surface (surface/claim_surface.h) and the driver's Scheduler.
//   SimServingStack:   the sim device on the virtual driver (deterministic, virtual time);
//   UringServingStack: the uring device on the threaded driver (wall clock, real bytes);
//   DaemonServingStack (daemon_engines.h): one engine process's client of a tempod.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "baselines/dax_l1.h"
#include "cluster_pool.h"
#include "core/object.h"
#include "stack/sim_stack.h"
#include "stack/stack.h"
#include "stack/threaded_driver.h"
#include "store/object_store.h"
#include "surface/stack_surface.h"
#include "uring/uring_device.h"

namespace tempo {

class ServingStack {
 public:
  virtual ~ServingStack() = default;
  virtual Driver& driver() = 0;
  // The in-process stack (its counters, the device behind it).
  virtual Stack& stack() = 0;
  // What the engine drives: by default the in-process stack's claim surface.
  virtual ClaimSurface& claims();
  // Puts an object on the SSD tier before the run. 0, or a negative errno with *error.
  virtual int preload(const KvObject& object, std::string* error) = 0;
  // Runs timed work and device completions until `done()` (evaluated on the driver) holds
  // and nothing is pending.
  virtual void run(const std::function<bool()>& done) = 0;
  // The fast-tier-to-GPU copy of a TRANSFERRING claim (real devices move its extents' bytes;
  // the sim device has none). Returns the bytes copied.
  virtual uint64_t copy_out(ClaimId claim);
  // The dax-l1 baseline (LMCache's DAX-L1 reading through device memory), outside any
  // claim; `done(status)` runs on the driver. The default is the device's demand read.
  virtual int read_dax_l1(std::span<const ObjectKey> keys, std::function<void(int)> done);
  // Replays across hosts: whether this host's own SSD tier holds `key` (not only the
  // cluster pool below it), and keeping an object a request of this host computed (its
  // local store, written through to the pool). A single host holds every object already.
  virtual bool holds_locally(ObjectKey /*key*/) const { return true; }
  virtual void save(const KvObject& /*object*/) {}

 private:
  std::unique_ptr<StackSurface> local_claims_;  // claims() over stack(), made on first use
};

// A sim device and its stack on a virtual driver that several hosts of one run may share,
// with the cluster pool below it when one is given (cluster_pool.h): the device's remote
// source is then `config.remote`, pool_source() of that pool.
class SimServingStack final : public ServingStack {
 public:
  // `driver` and `pool` outlive the stack. Throws std::invalid_argument on an invalid
  // configuration.
  SimServingStack(VirtualDriver& driver, const SimStackConfig& config, ClusterPool* pool = nullptr)
      : driver_(driver),
        device_(driver, checked(config).device, config.remote),
        pool_(pool),
        stack_(driver, driver.clock(), device_, StackConfig{config.provider, config.controller}) {}
  SimDevice& device() { return device_; }
  Driver& driver() override { return driver_; }
  Stack& stack() override { return stack_; }
  int preload(const KvObject& object, std::string* error) override;
  // Runs the shared driver until nothing is left.
  void run(const std::function<bool()>& done) override;
  bool holds_locally(ObjectKey key) const override { return device_.holds_locally(key); }
  void save(const KvObject& object) override;

 private:
  static const SimStackConfig& checked(const SimStackConfig& config) {
    if (std::string why; SimDevice::validate(config.device, config.remote, &why) != 0)
      throw std::invalid_argument(why);
    return config;
  }

  VirtualDriver& driver_;
  SimDevice device_;
  ClusterPool* pool_;
  Stack stack_;
};

struct UringBackendOptions {
  std::string store_dir;  // created on first use and kept: later runs reuse its objects
  // The device (built from the settings: config/from_settings.h); its fast tier a DRAM
  // arena of the replay's (byte-scaled) size.
  UringDeviceOptions device;
};

// The store and the device, opened once and shared by the runs of an experiment (mapping and
// prefaulting a multi-GiB arena per run would dominate); each run starts from an empty
// fast tier.
class UringBackend {
 public:
  static int create(const UringBackendOptions& options, std::unique_ptr<UringBackend>* out,
                    std::string* error);
  ObjectStore& store() { return *store_; }
  UringDevice& device() { return *device_; }

 private:
  UringBackend() = default;
  MonotonicClock clock_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<UringDevice> device_;  // declared after the store it reads
};

class UringServingStack final : public ServingStack {
 public:
  // A run on `backend` (which outlives it): empties the fast tier, then builds the stack on
  // a threaded driver of its own. Throws std::invalid_argument for an invalid configuration
  // and std::runtime_error when the driver cannot be set up.
  UringServingStack(UringBackend& backend, const StackConfig& config);
  // Stops the driver, then drops the stack (its pins on the shared device).
  ~UringServingStack() override;

  Driver& driver() override { return *driver_; }
  Stack& stack() override { return *stack_; }
  // Writes the object to the store unless the store already holds it at that size. Its
  // bytes are a function of the key, so any later read can be checked.
  int preload(const KvObject& object, std::string* error) override;
  void run(const std::function<bool()>& done) override;
  uint64_t copy_out(ClaimId claim) override;
  // Reads every object as a load through device memory would (study/dax_l1.h).
  int read_dax_l1(std::span<const ObjectKey> keys, std::function<void(int)> done) override;

  uint64_t preloaded_bytes_written() const { return written_; }

 private:
  UringBackend& backend_;
  std::unique_ptr<ThreadedDriver> driver_;
  std::unique_ptr<Stack> stack_;
  DaxL1Reader dax_l1_;           // driver thread
  std::vector<std::byte> sink_;  // where copy_out and dax-l1 reads land (driver thread)
  uint64_t written_ = 0;
};

// The bytes tempo-replay stores for an object: a pattern derived from its key.
void fill_object_pattern(ObjectKey key, std::span<std::byte> out);

// Writes `object` (its pattern) to `store` unless the store already holds it at that size.
// 0, adding the bytes written to *written; or a negative errno with *error.
int preload_object(ObjectStore& store, const KvObject& object, uint64_t* written,
                   std::string* error);

}  // namespace tempo
