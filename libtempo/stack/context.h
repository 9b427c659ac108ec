// One running stack behind the C ABI (tempo_ctx) and the control socket: the device the
// settings name, its Stack, and the driver that runs it. Every method is thread-safe: it
// is posted to the driver (ThreadedDriver for real devices: uring, kmod; VirtualDriver for
// sim, whose waits run virtual time forward).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/settings.h"
#include "stack/driver.h"
#include "stack/stack.h"

namespace tempo {

class ClusterTier;
class KmodDevice;
class ObjectStore;
class SimDevice;
class VirtualDriver;

// Which driver runs a context's stack: by default the virtual one for the sim device (its
// waits run virtual time forward) and the threaded one for real devices.
enum class DriverKind : uint8_t { kDefault, kVirtual, kThreaded };

// Where an object lies on the kmod device's backing disk: `bytes` bytes at `offset` of
// tempo.ko's logical range (its backing device), written there before.
struct ObjectPlacement {
  ObjectKey key = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

class Context {
 public:
  // Builds the stack `settings` describe on the driver `driver` names. 0, or a negative
  // errno with `error` saying why (-EINVAL settings, -EOPNOTSUPP device not available in
  // this build, the store's, the fast tier's or the ring's errors; kmod: the device node's
  // open errors, -ENOTTY not a tempo device, -EINVAL a budget above tempo.ko's pin limit).
  static int create(const Settings& settings, std::unique_ptr<Context>* out, std::string* error,
                    DriverKind driver = DriverKind::kDefault);
  // A context on the threaded driver over a real device the caller set up and keeps until
  // the context is gone (tests, tools). Same errors.
  static int create(Device& device, const StackConfig& config, std::unique_ptr<Context>* out,
                    std::string* error);
  // Stops the driver, then drops the stack before its device and the device before its store.
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  std::string_view device_kind() const { return kind_; }
  TimeNs now() { return driver_->now(); }
  // The driver and the stack it runs, for the in-process claim surface
  // (surface/stack_surface.h), which calls the stack through the driver only.
  Driver& driver() { return *driver_; }
  Stack& stack() { return *stack_; }
  // Runs fn(stack) where the stack runs (its driver) and returns fn's result: every claim
  // operation of stack/stack.h goes through here, with the errors documented there.
  template <typename F>
  auto call(F&& fn) -> decltype(fn(std::declval<Stack&>())) {
    using R = decltype(fn(std::declval<Stack&>()));
    if constexpr (std::is_void_v<R>) {
      driver_->call([&] { fn(*stack_); });
    } else {
      R result{};
      driver_->call([&] { result = fn(*stack_); });
      return result;
    }
  }

  // The threaded driver only: calls `on_readable` on the driver (where the stack runs)
  // whenever `fd` polls readable, until unwatch(fd). -EOPNOTSUPP on the virtual driver.
  int watch(int fd, std::function<void()> on_readable);
  void unwatch(int fd);

  // Waits up to `timeout` for a claim to be stage-ready (kReady) or to take the ordinary
  // path (kOrdinary). -ETIMEDOUT, -ENOENT, -ECANCELED (released or cancelled), the claim's
  // error (FAILED), -EINVAL negative timeout, -EOVERFLOW when now + timeout passes
  // kMaxTimeNs. On the virtual driver the wait runs virtual time forward.
  int wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome);
  // The ordinary read of an ORDINARY claim, returning once its objects are read: 0 or the
  // read's error; -ENOENT unknown, -EINVAL not ORDINARY or read already.
  int ordinary_read(ClaimId id);

  // The sim device only: objects on the SSD tier (-EEXIST if one is held or listed twice,
  // -EINVAL zero bytes; nothing is added then). -EOPNOTSUPP elsewhere.
  // The virtual driver only: runs time forward by `ns` (-EINVAL negative, -EOVERFLOW past
  // kMaxTimeNs: the clock stays). -EOPNOTSUPP on the threaded driver (wall clock).
  int sim_add_objects(std::span<const KvObject> objects);
  int sim_advance(TimeNs ns);
  // The uring device only: writes an object into the store, idempotently
  // (store/idempotent_put.h: -EEXIST held with other bytes, -EINVAL empty), and through to
  // the cluster tier without waiting; deletes one from the store (-ENOENT). -EOPNOTSUPP
  // elsewhere.
  int store_put(ObjectKey key, std::span<const std::byte> data);
  int store_delete(ObjectKey key);
  // The kmod device only: places objects already written to tempo.ko's backing device, all
  // or none: -EINVAL zero bytes or an offset that is not a multiple of the extent size,
  // -ERANGE beyond the device, -EEXIST a key placed already (or twice), -EBUSY a range
  // sharing an extent with another object. -EOPNOTSUPP elsewhere.
  int kmod_add_objects(std::span<const ObjectPlacement> objects);
  // The uring device's object store (nullptr elsewhere), for maintenance through its owner
  // (tempod's STORE_LIST, STORE_VERIFY, STORE_GC); thread-safe as ObjectStore is.
  ObjectStore* store() const { return store_.get(); }

 private:
  Context() = default;
  // Watches the device's completions on the driver, builds the stack, starts the driver.
  int start(const StackConfig& config, std::string* error);

  std::string kind_;
  std::unique_ptr<Driver> driver_;  // destroyed last: the device and stack schedule on it
  // Shared only so that its deleter is fixed where it is made: built without liburing,
  // nothing here names the store's destructor.
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<ClusterTier> cluster_;  // below the store (cluster.backend); null when off
  std::unique_ptr<Device> owned_device_;
  Device* device_ = nullptr;
  std::unique_ptr<Stack> stack_;
  SimDevice* sim_ = nullptr;          // device_, when it is the sim device
  KmodDevice* kmod_ = nullptr;        // device_, when it is the kmod device
  VirtualDriver* virtual_ = nullptr;  // driver_, when it is the virtual driver
};

}  // namespace tempo
