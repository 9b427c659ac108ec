// The C ABI of include/tempo/tempo.h over the C++ stack. Nothing throws across it: every
// entry point validates its arguments, calls the context (thread-safe) and maps failures
// to a negative errno.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "capi/capi_context.h"
#include "client/daemon_client.h"
#include "client/wire.h"
#include "config/config_file.h"
#include "config/settings.h"
#include "control/control_server.h"
#include "stack/context.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

struct tempo_config {
  tempo::Settings settings;
  std::string error;
};

struct tempo_ctx {
  std::atomic<int> refs{1};
  std::unique_ptr<tempo::Context> context;
  std::unique_ptr<tempo::DaemonClient> client;    // device = daemon: every call goes to tempod
  std::unique_ptr<tempo::ControlServer> control;  // declared after: stops before the context
  tempo_log_fn log_fn = nullptr;
  void* log_data = nullptr;
};

namespace {

using tempo::ClaimId;

// Runs `f` on the context's stack, turning exceptions into errnos.
template <typename F>
int with_ctx(tempo_ctx* ctx, F&& f) {
  if (!ctx || !ctx->context) return -EINVAL;
  try {
    return f(*ctx->context);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  } catch (...) {
    return -EIO;
  }
}

// In client mode, runs `f` on the daemon client and stores its result in *r: true then.
template <typename F>
bool on_daemon(tempo_ctx* ctx, int* r, F&& f) {
  if (!ctx || !ctx->client) return false;
  try {
    *r = f(*ctx->client);
  } catch (const std::bad_alloc&) {
    *r = -ENOMEM;
  }
  return true;
}

// The daemon's socket when this configuration selects client mode (device = daemon, or
// TEMPO_DAEMON in the environment), else "".
std::string daemon_socket(const tempo::Settings& s) {
  if (const char* env = std::getenv("TEMPO_DAEMON"); env && *env) return env;
  return s.device == "daemon" ? s.daemon.socket : "";
}

// Runs `f` with the context's stack, on its driver.
template <typename F>
int with_stack(tempo_ctx* ctx, F&& f) {
  return with_ctx(ctx, [&](tempo::Context& c) { return c.call(f); });
}

void log(tempo_ctx* ctx, int priority, const std::string& msg) {
  if (ctx->log_fn) ctx->log_fn(ctx->log_data, priority, msg.c_str());
}

bool valid_size(size_t size) { return size > 0 && size <= TEMPO_STRUCT_SIZE_MAX; }

// A struct the library fills, into a caller's struct of `size` bytes (valid_size): the
// fields both know, zeros for the caller's fields this library does not know, nothing past
// `size`.
template <typename T>
void copy_sized(const T& from, void* to, size_t size) {
  std::memcpy(to, &from, std::min(size, sizeof(T)));
  if (size > sizeof(T)) std::memset(static_cast<char*>(to) + sizeof(T), 0, size - sizeof(T));
}

int claim_info(tempo_ctx* ctx, tempo_claim_id id, tempo_claim_info* info) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.query(id, info); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) {
    tempo::ClaimView c;
    if (const int err = in.query(id, &c); err != 0) return err;
    tempo::to_claim_info(c, info);
    return 0;
  });
}

int counters(tempo_ctx* ctx, tempo_counters* s) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.stats(s); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) {
    tempo::to_counters(in.stats(), s);
    return 0;
  });
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

}  // namespace

tempo::Context* tempo_capi_context(tempo_ctx* ctx) { return ctx ? ctx->context.get() : nullptr; }

tempo::DaemonClient* tempo_capi_client(tempo_ctx* ctx) { return ctx ? ctx->client.get() : nullptr; }

extern "C" {

TEMPO_EXPORT const char* tempo_version(void) { return TEMPO_LIBRARY_VERSION; }

TEMPO_EXPORT int tempo_version_check(unsigned major, unsigned minor) {
  return major == TEMPO_VERSION_MAJOR && minor <= TEMPO_VERSION_MINOR ? 0 : -ENOTSUP;
}

TEMPO_EXPORT int tempo_config_new(tempo_config** out) {
  if (!out) return -EINVAL;
  *out = new (std::nothrow) tempo_config();
  return *out ? 0 : -ENOMEM;
}

TEMPO_EXPORT void tempo_config_free(tempo_config* config) { delete config; }

TEMPO_EXPORT int tempo_config_set(tempo_config* config, const char* key, const char* value) {
  if (!config || !key || !value) return -EINVAL;
  try {
    tempo::Settings next = config->settings;
    std::string error;
    const int r = next.set(key, value, &error);
    config->error = error;
    if (r == 0) config->settings = std::move(next);
    return r;
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

TEMPO_EXPORT const char* tempo_config_error(const tempo_config* config) {
  return config ? config->error.c_str() : "";
}

TEMPO_EXPORT int tempo_ctx_new(tempo_config* config, tempo_ctx** out) {
  if (!config || !out) return -EINVAL;
  *out = nullptr;
  try {
    config->error.clear();
    if (const std::string socket = daemon_socket(config->settings); !socket.empty()) {
      std::unique_ptr<tempo::DaemonClient> client;
      const int err = tempo::DaemonClient::connect(socket, config->settings.daemon.engine, &client,
                                                   &config->error);
      if (err != 0) return err;
      auto* ctx = new tempo_ctx();
      ctx->client = std::move(client);
      *out = ctx;
      return 0;
    }
    std::unique_ptr<tempo::Context> context;
    int err = tempo::Context::create(config->settings, &context, &config->error);
    if (err != 0) return err;
    std::unique_ptr<tempo::ControlServer> control;
    if (!config->settings.control_socket.empty()) {
      err = tempo::ControlServer::start(*context, config->settings.control_socket, &control,
                                        &config->error);
      if (err != 0) return err;
    }
    auto* ctx = new tempo_ctx();
    ctx->context = std::move(context);
    ctx->control = std::move(control);
    *out = ctx;
    return 0;
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

TEMPO_EXPORT tempo_ctx* tempo_ctx_ref(tempo_ctx* ctx) {
  if (ctx) ctx->refs.fetch_add(1, std::memory_order_relaxed);
  return ctx;
}

TEMPO_EXPORT void tempo_ctx_unref(tempo_ctx* ctx) {
  if (!ctx || ctx->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (ctx->client) {  // closing the connection cancels its claims in the daemon
    delete ctx;
    return;
  }
  const size_t live = ctx->context->call([](tempo::Stack& s) { return s.cancel_live(); });
  if (live > 0) log(ctx, 6, "tempo: context closed with " + std::to_string(live) + " live claims");
  delete ctx;
}

TEMPO_EXPORT void tempo_ctx_set_log_fn(tempo_ctx* ctx, tempo_log_fn fn, void* data) {
  if (!ctx) return;
  ctx->log_fn = fn;
  ctx->log_data = data;
}

TEMPO_EXPORT int64_t tempo_ctx_now(tempo_ctx* ctx) {
  int64_t now = -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.now(&now); }))
    return rc == 0 ? now : rc;
  with_ctx(ctx, [&](tempo::Context& in) {
    now = in.now();
    return 0;
  });
  return now;
}

TEMPO_EXPORT int tempo_ctx_tick(tempo_ctx* ctx) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [](tempo::DaemonClient& d) { return d.tick(); })) return rc;
  return with_stack(ctx, [](tempo::Stack& s) {
    s.tick();
    return 0;
  });
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
  out->deferred_claims = s.capacity_deferrals;
  return 0;
}

TEMPO_EXPORT int tempo_sim_add_objects(tempo_ctx* ctx, const tempo_object* objects, size_t count) {
  if (!objects && count) return -EINVAL;
  if (ctx && ctx->client) return -EOPNOTSUPP;
  return with_ctx(ctx, [&](tempo::Context& in) {
    std::vector<tempo::KvObject> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = {objects[i].key, objects[i].bytes};
    return in.sim_add_objects(v);
  });
}

TEMPO_EXPORT int tempo_sim_advance(tempo_ctx* ctx, int64_t ns) {
  if (ctx && ctx->client) return -EOPNOTSUPP;
  return with_ctx(ctx, [&](tempo::Context& in) { return in.sim_advance(ns); });
}

TEMPO_EXPORT int tempo_claim_report(tempo_ctx* ctx, const tempo_object* objects, size_t count,
                                    int64_t ttu_ns, tempo_claim_id* id) {
  // Over the limit, refused before copying what could be gigabytes.
  if (!id || (!objects && count) || count > tempo::kMaxManifestObjects) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc,
                [&](tempo::DaemonClient& d) { return d.report(objects, count, ttu_ns, id); }))
    return rc;
  return with_stack(ctx, [&](tempo::Stack& in) {
    tempo::Manifest m(count);
    for (size_t i = 0; i < count; ++i) m[i] = {objects[i].key, objects[i].bytes};
    return in.report(m, ttu_ns, id);
  });
}

TEMPO_EXPORT int tempo_claim_revise(tempo_ctx* ctx, tempo_claim_id id, int64_t ttu_ns) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.revise(id, ttu_ns); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) { return in.revise(id, ttu_ns); });
}

TEMPO_EXPORT int tempo_order_update(tempo_ctx* ctx, const tempo_claim_id* ids, size_t count) {
  if (!ids && count) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.order(ids, count); })) return rc;
  return with_stack(
      ctx, [&](tempo::Stack& in) { return in.update_order(std::span<const ClaimId>(ids, count)); });
}

TEMPO_EXPORT int tempo_claim_request_retrieval(tempo_ctx* ctx, tempo_claim_id id, int* outcome) {
  if (!outcome) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.request_retrieval(id, outcome); }))
    return rc;
  return with_stack(ctx, [&](tempo::Stack& in) {
    tempo::RetrievalOutcome o{};
    const int r = in.request_retrieval(id, &o);
    if (r == 0) *outcome = static_cast<int>(o);
    return r;
  });
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

TEMPO_EXPORT int tempo_claim_transfer_begin(tempo_ctx* ctx, tempo_claim_id id) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.transfer_begin(id); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) { return in.begin_transfer(id); });
}

TEMPO_EXPORT int tempo_claim_transfer_end(tempo_ctx* ctx, tempo_claim_id id) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.transfer_end(id); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) { return in.end_transfer(id); });
}

TEMPO_EXPORT int tempo_claim_cancel(tempo_ctx* ctx, tempo_claim_id id) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.cancel(id); })) return rc;
  return with_stack(ctx, [&](tempo::Stack& in) { return in.cancel(id); });
}

TEMPO_EXPORT int tempo_config_load(tempo_config* config, const char* path) {
  if (!config) return -EINVAL;
  try {
    tempo::Settings next = config->settings;
    std::string error;
    const char* file = path ? path : std::getenv("TEMPO_CONFIG");
    int r = file ? tempo::load_config_file(next, file, &error) : 0;
    if (r == 0) r = tempo::apply_environment(next, ::getenv, &error);
    config->error = error;
    if (r == 0) config->settings = std::move(next);
    return r;
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

TEMPO_EXPORT const char* tempo_ctx_device(tempo_ctx* ctx) {
  if (ctx && ctx->client) return ctx->client->device();
  return ctx && ctx->context ? ctx->context->device_kind().data() : nullptr;
}

TEMPO_EXPORT int tempo_claim_wait_ready(tempo_ctx* ctx, tempo_claim_id id, int64_t timeout_ns,
                                        int* outcome) {
  if (!outcome || timeout_ns < 0) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc,
                [&](tempo::DaemonClient& d) { return d.wait_ready(id, timeout_ns, outcome); }))
    return rc;
  return with_ctx(ctx, [&](tempo::Context& in) {
    tempo::RetrievalOutcome o{};
    const int r = in.wait_ready(id, timeout_ns, &o);
    if (r == 0) *outcome = static_cast<int>(o);
    return r;
  });
}

TEMPO_EXPORT int tempo_claim_extents(tempo_ctx* ctx, tempo_claim_id id, tempo_extent* extents,
                                     size_t capacity, size_t* count) {
  if (!count || (!extents && capacity)) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc,
                [&](tempo::DaemonClient& d) { return d.extents(id, extents, capacity, count); }))
    return rc;
  return with_stack(ctx, [&](tempo::Stack& in) {
    std::vector<std::span<const std::byte>> ext;
    if (const int r = in.extents(id, &ext); r != 0) return r;
    *count = ext.size();
    if (capacity < ext.size()) return -ENOSPC;
    for (size_t i = 0; i < ext.size(); ++i) extents[i] = {ext[i].data(), ext[i].size()};
    return 0;
  });
}

TEMPO_EXPORT int tempo_claim_ordinary_read(tempo_ctx* ctx, tempo_claim_id id) {
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.ordinary_read(id); })) return rc;
  return with_ctx(ctx, [&](tempo::Context& in) { return in.ordinary_read(id); });
}

TEMPO_EXPORT int tempo_store_put(tempo_ctx* ctx, uint64_t key, const void* data, size_t bytes) {
  if (!data && bytes) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc, [&](tempo::DaemonClient& d) { return d.store_put(key, data, bytes); }))
    return rc;
  return with_ctx(ctx, [&](tempo::Context& in) {
    return in.store_put(key, std::span(static_cast<const std::byte*>(data), bytes));
  });
}

TEMPO_EXPORT int tempo_kmod_add_objects(tempo_ctx* ctx, const tempo_kmod_object* objects,
                                        size_t count) {
  if (!objects && count) return -EINVAL;
  int rc = 0;
  if (on_daemon(ctx, &rc,
                [&](tempo::DaemonClient& d) { return d.kmod_add_objects(objects, count); }))
    return rc;
  return with_ctx(ctx, [&](tempo::Context& in) {
    std::vector<tempo::ObjectPlacement> v(count);
    for (size_t i = 0; i < count; ++i) {
      if (objects[i].reserved != 0) return -EINVAL;
      v[i] = {objects[i].key, objects[i].offset, objects[i].bytes};
    }
    return in.kmod_add_objects(v);
  });
}

}  // extern "C"
