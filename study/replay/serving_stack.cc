#include "serving_stack.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tempo {

ClaimSurface& ServingStack::claims() {
  if (!local_claims_) local_claims_ = std::make_unique<StackSurface>(driver(), stack());
  return *local_claims_;
}

uint64_t ServingStack::copy_out(ClaimId /*claim*/) { return 0; }

int ServingStack::read_dax_l1(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  return stack().device().demand_read(keys, std::move(done));
}

int SimServingStack::preload(const KvObject& object, std::string* error) {
  const int r = device_.add_object(object.key, object.bytes);
  if (r != 0)
    *error = "object " + std::to_string(object.key) + " preloaded twice or with zero bytes";
  return r;
}

void SimServingStack::save(const KvObject& object) {
  if (!holds_locally(object.key)) device_.add_object(object.key, object.bytes);
  if (pool_) pool_->write_through(object);
}

void SimServingStack::run(const std::function<bool()>& /*done*/) { driver_.run_all(); }

void fill_object_pattern(ObjectKey key, std::span<std::byte> out) {
  uint64_t x = key * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i + 8 <= out.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + i, &x, 8);
  }
  for (size_t i = out.size() & ~size_t{7}; i < out.size(); ++i)
    out[i] = std::byte(key >> 8 * (i & 7));
}

int UringBackend::create(const UringBackendOptions& o, std::unique_ptr<UringBackend>* out,
                         std::string* error) {
  std::unique_ptr<UringBackend> b(new UringBackend());
  ObjectStoreOptions so;
  so.dir = o.store_dir;
  if (const int r = ObjectStore::open(so, &b->store_); r != 0) {
    *error = "cannot open the object store in " + o.store_dir + ": " + std::strerror(-r);
    return r;
  }
  if (const int r = UringDevice::create(*b->store_, o.device, b->clock_, &b->device_, error);
      r != 0)
    return r;
  *out = std::move(b);
  return 0;
}

UringServingStack::UringServingStack(UringBackend& backend, const StackConfig& config)
    : backend_(backend), dax_l1_(backend.store(), backend.device()) {
  std::string error;
  if (ThreadedDriver::create(&driver_, &error) != 0) throw std::runtime_error(error);
  UringDevice* dev = &backend.device();
  if (driver_->watch(dev->completion_fd(), [dev] { dev->process_completions(); }) != 0)
    throw std::runtime_error("cannot watch the uring device's completions");
  dev->drop_unpinned();  // the paper resets the fast tier before each run
  stack_ = std::make_unique<Stack>(*driver_, driver_->clock(), *dev, config);
  driver_->start();
}

UringServingStack::~UringServingStack() {
  driver_->stop();
  stack_.reset();
}

int preload_object(ObjectStore& store, const KvObject& object, uint64_t* written,
                   std::string* error) {
  if (auto info = store.lookup(object.key); info && info->size == object.bytes) return 0;
  std::vector<std::byte> data(object.bytes);
  fill_object_pattern(object.key, data);
  const int r = store.put(object.key, data);
  if (r != 0) {
    *error = "cannot store object " + std::to_string(object.key) + ": " + std::strerror(-r);
    return r;
  }
  *written += object.bytes;
  return 0;
}

int UringServingStack::preload(const KvObject& object, std::string* error) {
  return preload_object(backend_.store(), object, &written_, error);
}

void UringServingStack::run(const std::function<bool()>& done) {
  backend_.store().sync();
  UringDevice& dev = backend_.device();
  driver_->wait_until([&] { return done() && dev.idle(); }, kNever);
}

uint64_t UringServingStack::copy_out(ClaimId claim) {
  std::vector<std::span<const std::byte>> extents;
  if (stack_->extents(claim, &extents) != 0) return 0;
  uint64_t copied = 0;
  for (const auto& e : extents) {
    if (sink_.size() < e.size()) sink_.resize(e.size());
    std::memcpy(sink_.data(), e.data(), e.size());
    copied += e.size();
  }
  return copied;
}

int UringServingStack::read_dax_l1(std::span<const ObjectKey> keys, std::function<void(int)> done) {
  // LMCache's DAX-L1 reads through device memory: each touched granule that is not
  // resident is fetched from SSD before the copy goes on, synchronously.
  int status = 0;
  for (ObjectKey key : keys) {
    const int64_t size = backend_.device().object_size(key);
    if (size < 0) return static_cast<int>(size);
    if (sink_.size() < static_cast<uint64_t>(size)) sink_.resize(static_cast<size_t>(size));
    const int64_t r = dax_l1_.read(key, 0, std::span(sink_.data(), static_cast<size_t>(size)));
    if (r < 0 && status == 0) status = static_cast<int>(r);
  }
  driver_->schedule_after(0, [done = std::move(done), status] { done(status); });
  return 0;
}

}  // namespace tempo
