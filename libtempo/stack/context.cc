#include "stack/context.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "config/from_settings.h"
#include "device/sim_device.h"
#include "kmod/kmod_device.h"
#include "stack/blocking_calls.h"
#include "stack/threaded_driver.h"
#include "stack/virtual_driver.h"
#ifndef TEMPO_WITHOUT_URING
#include "cluster/make_cluster_tier.h"
#include "store/idempotent_put.h"
#include "store/object_store.h"
#include "uring/uring_device.h"
#endif

namespace tempo {
namespace {

#ifdef TEMPO_WITHOUT_URING
int open_uring(const Settings&, const Clock&, std::shared_ptr<ObjectStore>*,
               std::shared_ptr<ClusterTier>*, std::unique_ptr<Device>*, std::string* error) {
  *error = "device 'uring' is not available: libtempo was built without liburing";
  return -EOPNOTSUPP;
}
#else
// The uring device's store, cluster tier (cluster.backend) and device. 0, or -errno with
// `error`.
int open_uring(const Settings& s, const Clock& clock, std::shared_ptr<ObjectStore>* store,
               std::shared_ptr<ClusterTier>* cluster, std::unique_ptr<Device>* device,
               std::string* error) {
  const ObjectStoreOptions so = object_store_options(s);
  RecoveryReport report;
  std::unique_ptr<ObjectStore> opened;
  if (const int r = ObjectStore::open(so, &opened, &report); r != 0) {
    *error = "uring.store_path '" + so.dir +
             "': cannot open the object store: " + std::strerror(-r) +
             (report.errors.empty() ? "" : ": " + report.errors.back());
    if (const pid_t holder = store_lock_holder(so.dir); r == -EBUSY && holder > 0)
      *error += " (locked by pid " + std::to_string(holder) + ")";
    return r;
  }
  std::unique_ptr<ClusterTier> tier;
  if (const int r = make_cluster_tier(s.cluster, &tier, error); r != 0) return r;
  *cluster = std::move(tier);
  UringDeviceOptions d = uring_device_options(s);
  d.cluster = cluster->get();
  d.fast_tier.shareable = s.uring.share_fast_tier;
  *store = std::move(opened);
  std::unique_ptr<UringDevice> dev;
  if (const int r = UringDevice::create(**store, d, clock, &dev, error); r != 0) return r;
  const uint64_t capacity = dev->info().capacity_bytes;
  if (s.budget_bytes >= capacity) {
    *error = "'budget_bytes' (" + std::to_string(s.budget_bytes) +
             ") must be below the fast tier's capacity (" + std::to_string(capacity) + ")";
    return -EINVAL;
  }
  *device = std::move(dev);
  return 0;
}
#endif

// The kmod device over kmod.path. 0, or -errno with `error`.
int open_kmod(const Settings& s, const Clock& clock, std::unique_ptr<KmodDevice>* device,
              std::string* error) {
  KmodDeviceOptions o = kmod_device_options(s);
  o.clock = &clock;
  std::unique_ptr<KmodDevice> dev;
  if (const int r = KmodDevice::open(o, &dev, error); r != 0) return r;
  // The kernel refuses pins past its limit: a budget above it would fail commits.
  const KmodGeometry& g = dev->geometry();
  if (s.budget_bytes > g.pin_limit_bytes || s.budget_bytes >= g.fast_bytes) {
    *error = "'budget_bytes' (" + std::to_string(s.budget_bytes) + ") must be at most " +
             s.kmod.path + "'s pin limit (" + std::to_string(g.pin_limit_bytes) +
             ", tempo.ko's pin_limit_mb) and below its fast tier (" + std::to_string(g.fast_bytes) +
             ")";
    return -EINVAL;
  }
  *device = std::move(dev);
  return 0;
}

}  // namespace

int Context::create(const Settings& s, std::unique_ptr<Context>* out, std::string* error,
                    DriverKind driver) {
  if (const int r = s.validate(error); r != 0) return r;
  if (s.device != "sim" && s.device != "uring" && s.device != "kmod") {
    *error = "device '" + s.device + "' is not available through this library build";
    return -EOPNOTSUPP;
  }
  std::unique_ptr<Context> c(new Context());
  c->kind_ = s.device;
  if (driver == DriverKind::kDefault)
    driver = s.device == "sim" ? DriverKind::kVirtual : DriverKind::kThreaded;
  if (driver == DriverKind::kVirtual) {
    auto v = std::make_unique<VirtualDriver>();
    c->virtual_ = v.get();
    c->driver_ = std::move(v);
  } else {
    std::unique_ptr<ThreadedDriver> t;
    if (const int r = ThreadedDriver::create(&t, error); r != 0) return r;
    c->driver_ = std::move(t);
  }
  try {
    if (s.device == "sim") {
      const SimDeviceConfig sim = sim_device_config(s);
      if (const int r = SimDevice::validate(sim, std::nullopt, error); r != 0) return r;
      auto dev = std::make_unique<SimDevice>(*c->driver_, sim);
      c->sim_ = dev.get();
      c->owned_device_ = std::move(dev);
    } else if (s.device == "kmod") {
      std::unique_ptr<KmodDevice> dev;
      if (const int r = open_kmod(s, c->driver_->clock(), &dev, error); r != 0) return r;
      c->kmod_ = dev.get();
      c->owned_device_ = std::move(dev);
    } else {
      if (const int r = open_uring(s, c->driver_->clock(), &c->store_, &c->cluster_,
                                   &c->owned_device_, error);
          r != 0)
        return r;
    }
    c->device_ = c->owned_device_.get();
    if (const int r = c->start(stack_config(s), error); r != 0) return r;
  } catch (const std::invalid_argument& e) {
    *error = e.what();
    return -EINVAL;
  }
  *out = std::move(c);
  return 0;
}

int Context::create(Device& device, const StackConfig& config, std::unique_ptr<Context>* out,
                    std::string* error) {
  std::unique_ptr<Context> c(new Context());
  c->kind_ = device.info().kind;
  c->device_ = &device;
  std::unique_ptr<ThreadedDriver> driver;
  if (const int r = ThreadedDriver::create(&driver, error); r != 0) return r;
  c->driver_ = std::move(driver);
  try {
    if (const int r = c->start(config, error); r != 0) return r;
  } catch (const std::invalid_argument& e) {
    *error = e.what();
    return -EINVAL;
  }
  *out = std::move(c);
  return 0;
}

int Context::start(const StackConfig& config, std::string* error) {
  Device* dev = device_;
  const int fd = dev->completion_fd();
  auto deliver = [dev] { dev->process_completions(); };
  if (virtual_ != nullptr) {
    if (fd >= 0) virtual_->watch(fd, deliver, [dev] { return !dev->idle(); });
    stack_ = std::make_unique<Stack>(*driver_, driver_->clock(), *dev, config);
    return 0;
  }
  auto& threaded = static_cast<ThreadedDriver&>(*driver_);
  if (fd >= 0) {
    if (const int r = threaded.watch(fd, deliver); r != 0) {
      *error = "cannot watch the device's completions";
      return r;
    }
  }
  stack_ = std::make_unique<Stack>(threaded, threaded.clock(), *dev, config);
  threaded.start();
  return 0;
}

Context::~Context() {
  if (driver_) driver_->stop();  // a context that failed to build may have none yet
  // The stack holds pins on the device, the device reads the store.
  stack_.reset();
  owned_device_.reset();  // waits for its reads from the cluster tier
  cluster_.reset();       // waits for its write-throughs
  store_.reset();
}

int Context::watch(int fd, std::function<void()> on_readable) {
  if (virtual_ != nullptr) return -EOPNOTSUPP;
  return static_cast<ThreadedDriver&>(*driver_).watch(fd, std::move(on_readable));
}

void Context::unwatch(int fd) {
  if (virtual_ == nullptr) static_cast<ThreadedDriver&>(*driver_).unwatch(fd);
}

int Context::wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) {
  return wait_claim_ready(*driver_, *stack_, id, timeout, outcome);
}

int Context::ordinary_read(ClaimId id) { return read_ordinary(*driver_, *stack_, id); }

int Context::sim_add_objects(std::span<const KvObject> objects) {
  if (sim_ == nullptr) return -EOPNOTSUPP;
  return call([&](Stack&) {
    for (size_t i = 0; i < objects.size(); ++i) {
      if (objects[i].bytes == 0) return -EINVAL;
      if (sim_->object_size(objects[i].key) >= 0) return -EEXIST;
      for (size_t j = 0; j < i; ++j)
        if (objects[j].key == objects[i].key) return -EEXIST;
    }
    for (const KvObject& o : objects) sim_->add_object(o.key, o.bytes);
    return 0;
  });
}

int Context::sim_advance(TimeNs ns) {
  if (virtual_ == nullptr) return -EOPNOTSUPP;
  if (ns < 0) return -EINVAL;
  int r = 0;
  // One call: the check and the advance see the same clock.
  virtual_->call(
      [&] { r = ns > kMaxTimeNs - virtual_->now() ? -EOVERFLOW : virtual_->advance(ns); });
  return r;
}

int Context::kmod_add_objects(std::span<const ObjectPlacement> objects) {
  if (kmod_ == nullptr) return -EOPNOTSUPP;
  return call([&](Stack&) {
    for (size_t i = 0; i < objects.size(); ++i) {
      const int r = kmod_->register_object(objects[i].key, objects[i].offset, objects[i].bytes);
      if (r == 0) continue;
      // All or none: the ones placed by this call go again (never staged nor pinned yet).
      while (i-- > 0) kmod_->unregister_object(objects[i].key);
      return r;
    }
    return 0;
  });
}

int Context::store_put(ObjectKey key, std::span<const std::byte> data) {
#ifdef TEMPO_WITHOUT_URING
  (void)key;
  (void)data;
  return -EOPNOTSUPP;
#else
  if (store_ == nullptr) return -EOPNOTSUPP;
  if (data.empty()) return -EINVAL;
  // The store serialises its own writers; the loop thread only reads placed objects.
  const int r = put_idempotent(*store_, key, data);
  // Written through to the cluster tier without waiting for it.
  if (r == 0 && cluster_) cluster_->put_async(key, data);
  return r;
#endif
}

int Context::store_delete(ObjectKey key) {
#ifdef TEMPO_WITHOUT_URING
  (void)key;
  return -EOPNOTSUPP;
#else
  if (store_ == nullptr) return -EOPNOTSUPP;
  return store_->remove(key);
#endif
}

}  // namespace tempo
