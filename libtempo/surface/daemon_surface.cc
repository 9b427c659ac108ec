#include "surface/daemon_surface.h"

#include <cerrno>

#include "client/wire.h"
#include "stack/driver.h"

namespace tempo {
namespace {

// Readiness waits for an observer run in slices of this much, so that the surface's end
// ends them within one slice.
constexpr TimeNs kWaitSlice = kNsPerSec;
// Waits for observers (claims that answered WAIT) and ordinary reads in flight at once;
// more queue behind them.
constexpr size_t kMaxWaiters = 64;

RetrievalOutcome outcome_of(int c_outcome) {
  switch (c_outcome) {
    case TEMPO_RETRIEVAL_READY:
      return RetrievalOutcome::kReady;
    case TEMPO_RETRIEVAL_WAIT:
      return RetrievalOutcome::kWait;
    default:
      return RetrievalOutcome::kOrdinary;
  }
}

}  // namespace

int DaemonSurface::open(const std::string& socket, const std::string& engine,
                        std::unique_ptr<ClaimSurface>* out, std::string* error) {
  std::unique_ptr<DaemonClient> client;
  if (const int r = DaemonClient::connect(socket, engine, &client, error); r != 0) return r;
  out->reset(new DaemonSurface(std::move(client)));
  return 0;
}

DaemonSurface::~DaemonSurface() {
  std::vector<std::thread> waiters;
  {
    const std::lock_guard hold(mu_);
    stopping_ = true;
    waiters.swap(waiters_);
  }
  work_.notify_all();
  for (std::thread& t : waiters) t.join();
}

int DaemonSurface::report(std::span<const KvObject> objects, TimeNs ttu, const TtuQuantiles*,
                          ClaimId* id) {
  // A REPORT carries one TTU; the spread goes with the claim's revisions.
  std::vector<tempo_object> v;
  v.reserve(objects.size());
  for (const KvObject& o : objects) v.push_back({o.key, o.bytes});
  tempo_claim_id got = 0;
  const int r = client_->report(v.data(), v.size(), ttu, &got);
  if (r == 0) *id = got;
  return r;
}

int DaemonSurface::revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) {
  std::vector<int> status;
  const Revision one{id, ttu, spread};
  if (const int r = revise_all({&one, 1}, &status); r != 0) return r;
  return status[0];
}

int DaemonSurface::revise_all(std::span<const Revision> revisions, std::vector<int>* statuses) {
  // Spreads travel only to a daemon whose policy reads them (REVISE_SPREAD).
  const bool spread = client_->reads_spread();
  if (revisions.size() == 1 && !(spread && revisions[0].spread)) {
    statuses->assign(1, client_->revise(revisions[0].id, revisions[0].ttu));
    return statuses->front() == -ECONNRESET ? -ECONNRESET : 0;
  }
  std::vector<DaemonClient::BatchOp> ops;
  ops.reserve(revisions.size());
  for (const Revision& v : revisions) {
    if (spread && v.spread)
      ops.push_back({TEMPOD_OP_REVISE_SPREAD, v.id, v.ttu, {}, v.spread});
    else
      ops.push_back({TEMPOD_OP_REVISE, v.id, v.ttu, {}});
  }
  std::vector<DaemonClient::BatchResult> results;
  if (const int r = client_->batch(ops, &results); r != 0) return r;
  statuses->resize(results.size());
  for (size_t i = 0; i < results.size(); ++i) (*statuses)[i] = results[i].status;
  return 0;
}

int DaemonSurface::update_orders(std::span<const std::span<const ClaimId>> orders) {
  // One connection is one engine: the daemon merges its engines' queues.
  if (orders.size() != 1) return -EINVAL;
  return client_->order(orders[0].data(), orders[0].size());
}

int DaemonSurface::request_retrieval(ClaimId id, RetrievalOutcome* outcome) {
  int got = 0;
  if (const int r = client_->request_retrieval(id, &got); r != 0) return r;
  *outcome = outcome_of(got);
  if (*outcome != RetrievalOutcome::kWait || observer_ == nullptr) return 0;
  post([this, id] {
    RetrievalOutcome ready = RetrievalOutcome::kOrdinary;
    int r = -ETIMEDOUT;
    for (;;) {
      r = wait_ready(id, kWaitSlice, &ready);
      const std::lock_guard hold(mu_);
      if (r != -ETIMEDOUT || stopping_) break;
    }
    if (r == -ETIMEDOUT) return;  // the surface is closing
    // A wait that failed (the claim went, the daemon went) leaves the ordinary path, whose
    // read then reports the error.
    driver_->call([this, id, ready, r] {
      if (r == 0 && ready == RetrievalOutcome::kReady)
        observer_->on_claim_ready(id);
      else
        observer_->on_claim_ordinary(id);
    });
  });
  return 0;
}

int DaemonSurface::query(ClaimId id, ClaimView* out) {
  tempo_claim_info info{};
  if (const int r = client_->query(id, &info); r != 0) return r;
  from_claim_info(id, info, out);
  return 0;
}

int DaemonSurface::wait_ready(ClaimId id, TimeNs timeout, RetrievalOutcome* outcome) {
  int got = 0;
  if (const int r = client_->wait_ready(id, timeout, &got); r != 0) return r;
  *outcome = outcome_of(got);
  return 0;
}

int DaemonSurface::extents(ClaimId id, std::vector<tempo_extent>* out) {
  out->resize(TEMPOD_MAX_EXTENTS);
  size_t count = 0;
  const int r = client_->extents(id, out->data(), out->size(), &count);
  out->resize(r == 0 ? count : 0);
  return r;
}

void DaemonSurface::observe(StackObserver* observer, Driver& driver) {
  observer_ = observer;
  driver_ = &driver;
}

int DaemonSurface::ordinary_read_async(ClaimId id, std::function<void(int)> done) {
  if (driver_ == nullptr) return -EINVAL;
  post([this, id, done = std::move(done)] {
    const int r = client_->ordinary_read(id);
    driver_->call([&] { done(r); });
  });
  return 0;
}

int DaemonSurface::kmod_add_objects(std::span<const ObjectPlacement> objects) {
  std::vector<tempo_kmod_object> v;
  v.reserve(objects.size());
  for (const ObjectPlacement& o : objects) v.push_back({o.key, o.offset, o.bytes, 0});
  return client_->kmod_add_objects(v.data(), v.size());
}

void DaemonSurface::post(std::function<void()> job) {
  const std::lock_guard hold(mu_);
  jobs_.push_back(std::move(job));
  if (idle_ == 0 && waiters_.size() < kMaxWaiters)
    waiters_.emplace_back([this] { wait_loop(); });
  else
    work_.notify_one();
}

void DaemonSurface::wait_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (stopping_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace tempo
