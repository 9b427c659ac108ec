// The C ABI of include/tempo/tempo.h over the claim surface (surface/claim_surface.h): every
// entry point validates its arguments and calls the context's surface, in process or in
// tempod alike, inside the one exception fence of capi_context.h.
#include <syslog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "capi/capi_context.h"
#include "client/wire.h"
#include "config/config_file.h"
#include "config/settings.h"
#include "controller/controller.h"
#include "provider/provider.h"
#include "surface/claim_surface.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

struct tempo_config {
  std::atomic<int> refs{1};
  mutable std::mutex mu;
  tempo::Settings settings;  // guarded by mu
  std::string error;         // guarded by mu
};

// A context's per-device sub-objects: parts of the context that name it, so a device's calls
// take the handle only a context of that device hands out.
struct tempo_store {
  tempo_ctx* ctx;
};
struct tempo_sim {
  tempo_ctx* ctx;
};
struct tempo_kmod {
  tempo_ctx* ctx;
};

struct tempo_ctx {
  std::atomic<int> refs{1};
  std::unique_ptr<tempo::ClaimSurface> surface;
  std::mutex log_mu;
  tempo_log_fn log_fn = nullptr;  // guarded by log_mu
  void* log_data = nullptr;       // guarded by log_mu
  tempo_store store{this};
  tempo_sim sim{this};
  tempo_kmod kmod{this};
};

namespace {

using tempo::ClaimId;
using tempo::ClaimSurface;
using tempo_capi::guard;
using tempo_capi::read_strided;

// Runs `f` on the context's claim surface inside the fence; -EINVAL for no context.
template <typename F>
int with_surface(tempo_ctx* ctx, F&& f) {
  if (!ctx) return -EINVAL;
  return guard([&] { return f(*ctx->surface); });
}

void log(tempo_ctx* ctx, int priority, const std::string& msg) {
  std::lock_guard lock(ctx->log_mu);
  if (ctx->log_fn) ctx->log_fn(ctx->log_data, priority, msg.c_str());
}

// TEMPO_TTU_UNKNOWN in, the clock's far end inside: the controller sees a claim whose laxity
// never runs out until a TTU is given.
int64_t ttu_in(int64_t ttu_ns) { return ttu_ns == TEMPO_TTU_UNKNOWN ? tempo::kMaxTimeNs : ttu_ns; }

// Which TTUs read back as unknown: a far-end TTU ages from 2^62 ns, and none given by an
// engine lies beyond 2^61 ns (73 years).
constexpr int64_t kUnknownTtuAbove = tempo::kMaxTimeNs / 2;

bool valid_size(size_t size) { return size > 0 && size <= TEMPO_STRUCT_SIZE_MAX; }

// A struct the library fills, into a caller's struct of `size` bytes (valid_size): the
// fields both know, zeros for the caller's fields this library does not know, nothing past
// `size`.
template <typename T>
void copy_sized(const T& from, void* to, size_t size) {
  std::memcpy(to, &from, std::min(size, sizeof(T)));
  if (size > sizeof(T)) std::memset(static_cast<char*>(to) + sizeof(T), 0, size - sizeof(T));
}

std::vector<tempo::KvObject> kv_objects(const tempo_object* objects, size_t count) {
  std::vector<tempo::KvObject> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = {objects[i].key, objects[i].bytes};
  return v;
}

int claim_info(tempo_ctx* ctx, tempo_claim_id id, tempo_claim_info* info) {
  return with_surface(ctx, [&](ClaimSurface& s) {
    tempo::ClaimView c;
    if (const int err = s.query(id, &c); err != 0) return err;
    tempo::to_claim_info(c, info);
    if (info->ttu_ns > kUnknownTtuAbove) {
      info->ttu_ns = TEMPO_TTU_UNKNOWN;
      info->laxity_ns = TEMPO_LAXITY_NONE;
    }
    return 0;
  });
}

int counters(tempo_ctx* ctx, tempo_counters* out) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.stats(out); });
}

// struct tempo_stats of ABI 0.1-0.2: capacity_deferrals counted attempts, deferred_claims
// the claims; the rest is struct tempo_counters' layout.
struct tempo_stats_0_1 {
  int64_t now_ns;
  uint64_t budget_bytes, ledger_bytes, reserved_bytes, claims_reported, claims_committed;
  uint64_t capacity_deferrals, deferred_claims;
  uint64_t rest[16];
  double effective_rate_bps, protected_gib_seconds;
};
static_assert(sizeof(tempo_stats_0_1) == sizeof(tempo_counters));
static_assert(sizeof(tempo_claim_info) > TEMPO_CLAIM_INFO_SIZE_0_1);

// 0 if ctx's device is `kind`; else -EOPNOTSUPP with a line to the context's log saying so.
int device_part(tempo_ctx* ctx, const char* kind, const char* call) {
  if (!ctx) return -EINVAL;
  const char* device = ctx->surface->device();
  if (std::strcmp(device, kind) == 0) return 0;
  log(ctx, LOG_ERR, std::string(call) + ": the context's device is " + device + ", not " + kind);
  return -EOPNOTSUPP;
}

}  // namespace

tempo::ClaimSurface* tempo_capi_surface(tempo_ctx* ctx) {
  return ctx ? ctx->surface.get() : nullptr;
}

void tempo_capi_log(tempo_ctx* ctx, int priority, const std::string& message) {
  if (ctx) log(ctx, priority, message);
}

// -ENOTSUP (0.1-0.6) and -EOPNOTSUPP (0.7) are one value on Linux: tempo_version_check
// answers old callers as before, so it needs no second symbol version.
static_assert(ENOTSUP == EOPNOTSUPP);

extern "C" {

TEMPO_EXPORT const char* tempo_version(void) { return TEMPO_LIBRARY_VERSION; }

TEMPO_EXPORT int tempo_version_check(unsigned major, unsigned minor) {
  return major == TEMPO_VERSION_MAJOR && minor <= TEMPO_VERSION_MINOR ? 0 : -EOPNOTSUPP;
}

TEMPO_EXPORT int tempo_config_new(tempo_config** out) {
  if (!out) return -EINVAL;
  *out = new (std::nothrow) tempo_config();
  return *out ? 0 : -ENOMEM;
}

TEMPO_EXPORT tempo_config* tempo_config_ref(tempo_config* config) {
  if (config) config->refs.fetch_add(1, std::memory_order_relaxed);
  return config;
}

TEMPO_EXPORT void tempo_config_unref(tempo_config* config) {
  if (config && config->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete config;
}

TEMPO_EXPORT void tempo_config_free(tempo_config* config) { tempo_config_unref(config); }

TEMPO_EXPORT int tempo_config_set(tempo_config* config, const char* key, const char* value) {
  if (!config || !key || !value) return -EINVAL;
  return guard([&] {
    std::lock_guard lock(config->mu);
    tempo::Settings next = config->settings;
    std::string error;
    const int r = next.set(key, value, &error);
    config->error = error;
    if (r == 0) config->settings = std::move(next);
    return r;
  });
}

TEMPO_EXPORT const char* tempo_config_error(const tempo_config* config) {
  if (!config) return "";
  std::lock_guard lock(config->mu);
  return config->error.c_str();
}

TEMPO_EXPORT int tempo_config_get_error(const tempo_config* config, char* buf, size_t size) {
  if (!config || !buf || size == 0) return -EINVAL;
  std::lock_guard lock(config->mu);
  const size_t n = std::min(config->error.size(), size - 1);
  std::memcpy(buf, config->error.data(), n);
  buf[n] = '\0';
  return n < config->error.size() ? -ENOSPC : 0;
}

TEMPO_EXPORT int tempo_ctx_new(tempo_config* config, tempo_ctx** out) {
  if (!config || !out) return -EINVAL;
  *out = nullptr;
  return guard([&] {
    std::lock_guard lock(config->mu);
    config->error.clear();
    std::unique_ptr<ClaimSurface> surface;
    if (const int r = tempo::open_claim_surface(config->settings, &surface, &config->error); r != 0)
      return r;
    auto* ctx = new tempo_ctx();
    ctx->surface = std::move(surface);
    *out = ctx;
    return 0;
  });
}

TEMPO_EXPORT tempo_ctx* tempo_ctx_ref(tempo_ctx* ctx) {
  if (ctx) ctx->refs.fetch_add(1, std::memory_order_relaxed);
  return ctx;
}

TEMPO_EXPORT void tempo_ctx_unref(tempo_ctx* ctx) {
  if (!ctx || ctx->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // In process the live claims are cancelled here; a daemon cancels them when the
  // connection closes.
  const size_t live = ctx->surface->cancel_live();
  if (live > 0) log(ctx, 6, "tempo: context closed with " + std::to_string(live) + " live claims");
  delete ctx;
}

TEMPO_EXPORT void tempo_ctx_set_log_fn(tempo_ctx* ctx, tempo_log_fn fn, void* data) {
  if (!ctx) return;
  std::lock_guard lock(ctx->log_mu);
  ctx->log_fn = fn;
  ctx->log_data = data;
}

TEMPO_EXPORT int tempo_ctx_get_now(tempo_ctx* ctx, int64_t* now_ns) {
  if (!now_ns) return -EINVAL;
  int64_t now = 0;
  const int r = with_surface(ctx, [&](ClaimSurface& s) { return s.now(&now); });
  if (r == 0) *now_ns = now;
  return r;
}

TEMPO_EXPORT int64_t tempo_ctx_now(tempo_ctx* ctx) {
  int64_t now = 0;
  const int r = tempo_ctx_get_now(ctx, &now);
  return r == 0 ? now : r;
}

TEMPO_EXPORT int tempo_ctx_tick(tempo_ctx* ctx) {
  return with_surface(ctx, [](ClaimSurface& s) { return s.tick(); });
}

// tempo_ctx_stats and tempo_claim_query have two versions each (libtempo.map lists them in
// TEMPO_0.1 and TEMPO_0.3): the definitions carry other names, bound to a version each.
extern "C" TEMPO_EXPORT int tempo_ctx_stats_0_3(tempo_ctx* ctx, tempo_counters* out, size_t size);
__asm__(".symver tempo_ctx_stats_0_3,tempo_ctx_stats@@TEMPO_0.3");
TEMPO_EXPORT int tempo_ctx_stats_0_3(tempo_ctx* ctx, tempo_counters* out, size_t size) {
  if (!out || !valid_size(size)) return -EINVAL;
  tempo_counters s;
  const int r = counters(ctx, &s);
  if (r == 0) copy_sized(s, out, size);
  return r;
}

TEMPO_EXPORT int tempo_ctx_get_stats(tempo_ctx* ctx, tempo_counters* out, size_t size) {
  return tempo_ctx_stats_0_3(ctx, out, size);
}

// Binaries built against ABI 0.1-0.2 call tempo_ctx_stats@TEMPO_0.1 without a size.
extern "C" TEMPO_EXPORT int tempo_ctx_stats_0_1(tempo_ctx* ctx, tempo_stats_0_1* out);
__asm__(".symver tempo_ctx_stats_0_1,tempo_ctx_stats@TEMPO_0.1");
TEMPO_EXPORT int tempo_ctx_stats_0_1(tempo_ctx* ctx, tempo_stats_0_1* out) {
  if (!out) return -EINVAL;
  tempo_counters s;
  const int r = counters(ctx, &s);
  if (r != 0) return r;
  std::memcpy(out, &s, sizeof(s));
  out->capacity_deferrals = s.capacity_deferral_attempts;
  out->deferred_claims = s.deferred_claims;
  return 0;
}

TEMPO_EXPORT int tempo_sim_add_objects(tempo_ctx* ctx, const tempo_object* objects, size_t count) {
  if (!objects && count) return -EINVAL;
  return with_surface(
      ctx, [&](ClaimSurface& s) { return s.sim_add_objects(kv_objects(objects, count)); });
}

TEMPO_EXPORT int tempo_sim_advance(tempo_ctx* ctx, int64_t ns) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.sim_advance(ns); });
}

TEMPO_EXPORT int tempo_claim_report(tempo_ctx* ctx, const tempo_object* objects, size_t count,
                                    int64_t ttu_ns, tempo_claim_id* id) {
  // Over the limit, refused before copying what could be gigabytes.
  if (!id || (!objects && count) || count > tempo::kMaxManifestObjects) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    return s.report(kv_objects(objects, count), ttu_in(ttu_ns), nullptr, id);
  });
}

TEMPO_EXPORT int tempo_claim_report_sized(tempo_ctx* ctx, const tempo_object* objects, size_t count,
                                          size_t object_size, int64_t ttu_ns, tempo_claim_id* id) {
  if (!id || (!objects && count) || count > tempo::kMaxManifestObjects) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    std::vector<tempo_object> in;
    if (const int r = read_strided(objects, count, object_size, &in); r != 0) return r;
    return s.report(kv_objects(in.data(), in.size()), ttu_in(ttu_ns), nullptr, id);
  });
}

TEMPO_EXPORT int tempo_claim_revise(tempo_ctx* ctx, tempo_claim_id id, int64_t ttu_ns) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.revise(id, ttu_in(ttu_ns), nullptr); });
}

TEMPO_EXPORT int tempo_claim_set_layers(tempo_ctx* ctx, tempo_claim_id id, uint32_t groups,
                                        int64_t per_group_ns) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.set_layers(id, groups, per_group_ns); });
}

TEMPO_EXPORT int tempo_ctx_set_order(tempo_ctx* ctx, const tempo_claim_id* ids, size_t count) {
  if (!ids && count) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    const std::span<const ClaimId> order(ids, count);
    return s.update_orders({&order, 1});
  });
}

TEMPO_EXPORT int tempo_order_update(tempo_ctx* ctx, const tempo_claim_id* ids, size_t count) {
  return tempo_ctx_set_order(ctx, ids, count);
}

TEMPO_EXPORT int tempo_claim_retrieve(tempo_ctx* ctx, tempo_claim_id id,
                                      tempo_retrieval_t* outcome) {
  if (!outcome) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    tempo::RetrievalOutcome o{};
    const int r = s.request_retrieval(id, &o);
    if (r == 0) *outcome = static_cast<tempo_retrieval_t>(o);
    return r;
  });
}

TEMPO_EXPORT int tempo_claim_request_retrieval(tempo_ctx* ctx, tempo_claim_id id, int* outcome) {
  if (!outcome) return -EINVAL;
  tempo_retrieval_t o = 0;
  const int r = tempo_claim_retrieve(ctx, id, &o);
  if (r == 0) *outcome = static_cast<int>(o);
  return r;
}

extern "C" TEMPO_EXPORT int tempo_claim_query_0_3(tempo_ctx* ctx, tempo_claim_id id,
                                                  tempo_claim_info* out, size_t size);
__asm__(".symver tempo_claim_query_0_3,tempo_claim_query@@TEMPO_0.3");
TEMPO_EXPORT int tempo_claim_query_0_3(tempo_ctx* ctx, tempo_claim_id id, tempo_claim_info* out,
                                       size_t size) {
  if (!out || !valid_size(size)) return -EINVAL;
  tempo_claim_info info;
  const int r = claim_info(ctx, id, &info);
  if (r == 0) copy_sized(info, out, size);
  return r;
}

// Binaries built against ABI 0.1-0.2 call tempo_claim_query@TEMPO_0.1 without a size: the
// struct of that time, TEMPO_CLAIM_INFO_SIZE_0_1 bytes.
extern "C" TEMPO_EXPORT int tempo_claim_query_0_1(tempo_ctx* ctx, tempo_claim_id id, void* out);
__asm__(".symver tempo_claim_query_0_1,tempo_claim_query@TEMPO_0.1");
TEMPO_EXPORT int tempo_claim_query_0_1(tempo_ctx* ctx, tempo_claim_id id, void* out) {
  return tempo_claim_query_0_3(ctx, id, static_cast<tempo_claim_info*>(out),
                               TEMPO_CLAIM_INFO_SIZE_0_1);
}

TEMPO_EXPORT int tempo_claim_get_info(tempo_ctx* ctx, tempo_claim_id id, tempo_claim_info* info,
                                      size_t size) {
  return tempo_claim_query_0_3(ctx, id, info, size);
}

TEMPO_EXPORT int tempo_claim_transfer_begin(tempo_ctx* ctx, tempo_claim_id id) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.transfer_begin(id); });
}

TEMPO_EXPORT int tempo_claim_transfer_end(tempo_ctx* ctx, tempo_claim_id id) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.transfer_end(id); });
}

TEMPO_EXPORT int tempo_claim_cancel(tempo_ctx* ctx, tempo_claim_id id) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.cancel(id); });
}

TEMPO_EXPORT int tempo_config_load(tempo_config* config, const char* path) {
  if (!config) return -EINVAL;
  return guard([&] {
    std::lock_guard lock(config->mu);
    tempo::Settings next = config->settings;
    std::string error;
    const char* file = path ? path : std::getenv("TEMPO_CONFIG");
    int r = file ? tempo::load_config_file(next, file, &error) : 0;
    if (r == 0) r = tempo::apply_environment(next, ::getenv, &error);
    config->error = error;
    if (r == 0) config->settings = std::move(next);
    return r;
  });
}

TEMPO_EXPORT const char* tempo_ctx_device(tempo_ctx* ctx) {
  return ctx ? ctx->surface->device() : nullptr;
}

TEMPO_EXPORT int tempo_ctx_get_device(tempo_ctx* ctx, const char** device) {
  if (!ctx || !device) return -EINVAL;
  *device = ctx->surface->device();
  return 0;
}

TEMPO_EXPORT int tempo_claim_wait(tempo_ctx* ctx, tempo_claim_id id, int64_t timeout_ns,
                                  tempo_retrieval_t* outcome) {
  if (!outcome || timeout_ns < 0) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    tempo::RetrievalOutcome o{};
    const int r = s.wait_ready(id, timeout_ns, &o);
    if (r == 0) *outcome = static_cast<tempo_retrieval_t>(o);
    return r;
  });
}

TEMPO_EXPORT int tempo_claim_wait_ready(tempo_ctx* ctx, tempo_claim_id id, int64_t timeout_ns,
                                        int* outcome) {
  if (!outcome) return -EINVAL;
  tempo_retrieval_t o = 0;
  const int r = tempo_claim_wait(ctx, id, timeout_ns, &o);
  if (r == 0) *outcome = static_cast<int>(o);
  return r;
}

TEMPO_EXPORT int tempo_claim_get_extents(tempo_ctx* ctx, tempo_claim_id id, tempo_extent* extents,
                                         size_t extent_size, size_t capacity, size_t* count) {
  if (!count || (!extents && capacity) || extent_size < sizeof(tempo_extent) ||
      extent_size > TEMPO_STRUCT_SIZE_MAX)
    return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    std::vector<tempo_extent> ext;
    if (const int r = s.extents(id, &ext); r != 0) return r;
    *count = ext.size();
    if (capacity < ext.size()) return -ENOSPC;
    auto* to = reinterpret_cast<unsigned char*>(extents);
    for (size_t i = 0; i < ext.size(); ++i) copy_sized(ext[i], to + i * extent_size, extent_size);
    return 0;
  });
}

TEMPO_EXPORT int tempo_claim_extents(tempo_ctx* ctx, tempo_claim_id id, tempo_extent* extents,
                                     size_t capacity, size_t* count) {
  return tempo_claim_get_extents(ctx, id, extents, sizeof(tempo_extent), capacity, count);
}

TEMPO_EXPORT int tempo_claim_ordinary_read(tempo_ctx* ctx, tempo_claim_id id) {
  return with_surface(ctx, [&](ClaimSurface& s) { return s.ordinary_read(id); });
}

TEMPO_EXPORT int tempo_store_put(tempo_ctx* ctx, uint64_t key, const void* data, size_t bytes) {
  if (!data && bytes) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    return s.store_put(key, std::span(static_cast<const std::byte*>(data), bytes));
  });
}

TEMPO_EXPORT int tempo_kmod_add_objects(tempo_ctx* ctx, const tempo_kmod_object* objects,
                                        size_t count) {
  if (!objects && count) return -EINVAL;
  return with_surface(ctx, [&](ClaimSurface& s) {
    std::vector<tempo::ObjectPlacement> v(count);
    for (size_t i = 0; i < count; ++i) {
      if (objects[i].reserved != 0) return -EINVAL;
      v[i] = {objects[i].key, objects[i].offset, objects[i].bytes};
    }
    return s.kmod_add_objects(v);
  });
}

TEMPO_EXPORT int tempo_ctx_get_store(tempo_ctx* ctx, tempo_store** out) {
  if (!out) return -EINVAL;
  const int r = device_part(ctx, "uring", "tempo_ctx_get_store");
  if (r == 0) *out = &ctx->store;
  return r;
}

TEMPO_EXPORT int tempo_ctx_get_sim(tempo_ctx* ctx, tempo_sim** out) {
  if (!out) return -EINVAL;
  const int r = device_part(ctx, "sim", "tempo_ctx_get_sim");
  if (r == 0) *out = &ctx->sim;
  return r;
}

TEMPO_EXPORT int tempo_ctx_get_kmod(tempo_ctx* ctx, tempo_kmod** out) {
  if (!out) return -EINVAL;
  const int r = device_part(ctx, "kmod", "tempo_ctx_get_kmod");
  if (r == 0) *out = &ctx->kmod;
  return r;
}

TEMPO_EXPORT int tempo_store_write(tempo_store* store, uint64_t key, const void* data,
                                   size_t bytes) {
  return store ? tempo_store_put(store->ctx, key, data, bytes) : -EINVAL;
}

TEMPO_EXPORT int tempo_store_get_prefix(tempo_store* store, const uint64_t* keys, size_t count,
                                        size_t* prefix) {
  return store ? tempo_store_lookup(store->ctx, keys, count, prefix) : -EINVAL;
}

TEMPO_EXPORT int tempo_store_remove(tempo_store* store, uint64_t key) {
  return store ? tempo_store_delete(store->ctx, key) : -EINVAL;
}

TEMPO_EXPORT int tempo_sim_add_objects_sized(tempo_sim* sim, const tempo_object* objects,
                                             size_t count, size_t object_size) {
  if (!sim || (!objects && count)) return -EINVAL;
  return with_surface(sim->ctx, [&](ClaimSurface& s) {
    std::vector<tempo_object> in;
    if (const int r = read_strided(objects, count, object_size, &in); r != 0) return r;
    return s.sim_add_objects(kv_objects(in.data(), in.size()));
  });
}

TEMPO_EXPORT int tempo_sim_run(tempo_sim* sim, int64_t ns) {
  return sim ? tempo_sim_advance(sim->ctx, ns) : -EINVAL;
}

TEMPO_EXPORT int tempo_kmod_add_objects_sized(tempo_kmod* kmod, const tempo_kmod_object* objects,
                                              size_t count, size_t object_size) {
  if (!kmod || (!objects && count)) return -EINVAL;
  return guard([&] {
    std::vector<tempo_kmod_object> in;
    if (const int r = read_strided(objects, count, object_size, &in); r != 0) return r;
    return tempo_kmod_add_objects(kmod->ctx, in.data(), in.size());
  });
}

}  // extern "C"
