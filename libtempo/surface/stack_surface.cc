#include "surface/stack_surface.h"

#include <cerrno>
#include <utility>

#include "client/wire.h"
#include "control/control_server.h"
#include "controller/commit_policy.h"
#include "stack/blocking_calls.h"
#ifndef TEMPO_WITHOUT_URING
#include "uring/uring_device.h"
#endif

namespace tempo {

StackSurface::StackSurface(Driver& driver, Stack& stack)
    : driver_(driver), stack_(stack), device_(stack.device().info().kind) {}

StackSurface::StackSurface(std::unique_ptr<Context> context)
    : context_(std::move(context)),
      driver_(context_->driver()),
      stack_(context_->stack()),
      device_(context_->device_kind()) {}

int StackSurface::open(const Settings& settings, std::unique_ptr<ClaimSurface>* out,
                       std::string* error) {
  std::unique_ptr<Context> context;
  if (const int r = Context::create(settings, &context, error); r != 0) return r;
  std::unique_ptr<StackSurface> s(new StackSurface(std::move(context)));
  if (!settings.control_socket.empty()) {
    if (const int r =
            ControlServer::start(*s->context_, settings.control_socket, &s->control_, error);
        r != 0)
      return r;
  }
  *out = std::move(s);
  return 0;
}

StackSurface::~StackSurface() { control_.reset(); }

template <typename F>
auto StackSurface::on_stack(F&& fn) -> decltype(fn(std::declval<Stack&>())) {
  decltype(fn(std::declval<Stack&>())) result{};
  driver_.call([&] { result = fn(stack_); });
  return result;
}

void StackSurface::inspect(const std::function<void(Stack&)>& fn) {
  driver_.call([&] { fn(stack_); });
}

const char* StackSurface::device() const { return device_.c_str(); }

bool StackSurface::reads_spread() const {
  // The policy is fixed at construction: read without the driver.
  return reads_ttu_spread(stack_.controller().config().policy);
}

int StackSurface::now(TimeNs* out) {
  *out = driver_.now();
  return 0;
}

int StackSurface::tick() {
  return on_stack([](Stack& s) {
    s.tick();
    return 0;
  });
}

int StackSurface::stats(tempo_counters* out) {
  return on_stack([&](Stack& s) {
    to_counters(s.stats(), out);
    return 0;
  });
}

int StackSurface::report(std::span<const KvObject> objects, TimeNs ttu, const TtuQuantiles* spread,
                         ClaimId* id) {
  const Manifest m(objects.begin(), objects.end());
  return on_stack([&](Stack& s) { return s.report(m, ttu, id, spread); });
}

int StackSurface::revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) {
  return on_stack([&](Stack& s) { return s.revise(id, ttu, spread); });
}

int StackSurface::revise_all(std::span<const Revision> revisions, std::vector<int>* statuses) {
  statuses->resize(revisions.size());
  return on_stack([&](Stack& s) {
    for (size_t i = 0; i < revisions.size(); ++i)
      (*statuses)[i] = s.revise(revisions[i].id, revisions[i].ttu, revisions[i].spread);
    return 0;
  });
}

int StackSurface::set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns) {
  return on_stack([&](Stack& s) { return s.set_layers(id, groups, per_group_ns); });
}

int StackSurface::update_orders(std::span<const std::span<const ClaimId>> orders) {
  return on_stack([&](Stack& s) { return s.update_orders(orders); });
}

int StackSurface::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  return on_stack([&](Stack& s) { return s.request_retrieval(id, outcome); });
}

int StackSurface::query(ClaimId id, ClaimView* out) {
  return on_stack([&](Stack& s) { return s.query(id, out); });
}

int StackSurface::label(ClaimId id, const std::string& request) {
  return on_stack([&](Stack& s) { return s.label(id, request); });
}

int StackSurface::transfer_begin(ClaimId id) {
  return on_stack([&](Stack& s) { return s.begin_transfer(id); });
}

int StackSurface::transfer_end(ClaimId id) {
  return on_stack([&](Stack& s) { return s.end_transfer(id); });
}

int StackSurface::cancel(ClaimId id) {
  return on_stack([&](Stack& s) { return s.cancel(id); });
}

int StackSurface::wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) {
  return wait_claim_ready(driver_, stack_, id, timeout, outcome);
}

int StackSurface::extents(ClaimId id, std::vector<tempo_extent>* out) {
  return on_stack([&](Stack& s) {
    std::vector<std::span<const std::byte>> ext;
    if (const int r = s.extents(id, &ext); r != 0) return r;
    out->clear();
    for (const auto& e : ext) out->push_back({e.data(), e.size()});
    return 0;
  });
}

int StackSurface::ordinary_read(ClaimId id) { return read_ordinary(driver_, stack_, id); }

int StackSurface::ready_objects(ClaimId id, std::vector<uint8_t>* out) {
  return on_stack([&](Stack& s) { return s.ready_objects(id, out); });
}

// The stack tells its observer on its own driver: the one an in-process engine runs on.
void StackSurface::observe(StackObserver* observer, Driver&) {
  driver_.call([&] { stack_.set_observer(observer); });
}

int StackSurface::ordinary_read_async(ClaimId id, std::function<void(int)> done) {
  return on_stack([&](Stack& s) { return s.ordinary_read(id, std::move(done)); });
}

int StackSurface::store_lookup(std::span<const ObjectKey> keys, size_t* prefix) {
  *prefix = on_stack([&](Stack& s) {
    size_t n = 0;
    while (n < keys.size() && s.object_size(keys[n]) >= 0) ++n;
    return n;
  });
  return 0;
}

int StackSurface::store_put(ObjectKey key, std::span<const std::byte> data) {
  return context_ ? context_->store_put(key, data) : -EOPNOTSUPP;
}

int StackSurface::store_delete(ObjectKey key) {
  return context_ ? context_->store_delete(key) : -EOPNOTSUPP;
}

int StackSurface::fast_tier(void** base, uint64_t* bytes) {
#ifdef TEMPO_WITHOUT_URING
  (void)base;
  (void)bytes;
  return -EOPNOTSUPP;
#else
  return on_stack([&](Stack& s) {
    const auto* dev = dynamic_cast<const UringDevice*>(&s.device());
    if (dev == nullptr) return -EOPNOTSUPP;
    *base = dev->region().base();
    *bytes = dev->region().size();
    return 0;
  });
#endif
}

int StackSurface::kmod_add_objects(std::span<const ObjectPlacement> objects) {
  return context_ ? context_->kmod_add_objects(objects) : -EOPNOTSUPP;
}

int StackSurface::sim_add_objects(std::span<const KvObject> objects) {
  return context_ ? context_->sim_add_objects(objects) : -EOPNOTSUPP;
}

int StackSurface::sim_advance(TimeNs ns) {
  return context_ ? context_->sim_advance(ns) : -EOPNOTSUPP;
}

size_t StackSurface::cancel_live() {
  return on_stack([](Stack& s) { return s.cancel_live(); });
}

}  // namespace tempo
