#include "config/from_settings.h"

#include <string>

namespace tempo {

ProviderConfig provider_config(const Settings& s) {
  ProviderConfig p;
  p.budget_bytes = s.budget_bytes;
  p.calibration_rate_bps = s.calibration_rate_bps;
  p.static_rate_bps = s.static_rate_bps;
  p.rate_window_ns = s.rate_window_ns;
  p.staging_slots = s.device == "uring" && s.is_explicit("staging_slots") ? s.staging_slots : 0;
  return p;
}

ControllerConfig controller_config(const Settings& s) {
  ControllerConfig c;
  c.policy = s.policy;
  c.tick_ns = s.tick_ns;
  return c;
}

StackConfig stack_config(const Settings& s) { return {provider_config(s), controller_config(s)}; }

SimDeviceConfig sim_device_config(const Settings& s) {
  return {s.fast_tier_bytes, s.staging_rate_bps, s.staging_slots,
          s.op_latency_ns,   s.demand_rate_bps,  s.eviction};
}

SimStackConfig sim_stack_config(const Settings& s) {
  SimStackConfig c;
  c.device = sim_device_config(s);
  c.provider = provider_config(s);
  c.controller = controller_config(s);
  return c;
}

ObjectStoreOptions object_store_options(const Settings& s) {
  ObjectStoreOptions o;
  o.dir = s.uring.store_path;
  o.data_path = s.uring.data_path;
  o.capacity_bytes = s.uring.store_capacity;
  o.sync = s.uring.store_sync;
  o.direct_io = s.uring.direct_io;
  o.queue_depth = s.uring.queue_depth;
  return o;
}

UringDeviceOptions uring_device_options(const Settings& s) {
  UringDeviceOptions d;
  d.keep_local = s.cluster.keep_local;
  d.fast_tier.kind = s.uring.fast_tier;
  // A DAX fast tier is the whole device unless fast_tier_bytes was given.
  d.fast_tier.bytes =
      s.uring.fast_tier == "dax" && !s.is_explicit("fast_tier_bytes") ? 0 : s.fast_tier_bytes;
  d.fast_tier.numa_node = s.uring.numa_node;
  d.fast_tier.huge_pages = s.uring.huge_pages;
  d.fast_tier.prefault = s.uring.prefault;
  d.fast_tier.dax_path = s.uring.dax_path;
  // Registration would pin (fault in) the arena at once: not when it is to fill lazily.
  d.register_buffers = s.uring.prefault;
  d.queue_depth = s.uring.queue_depth;
  d.request_bytes = s.uring.request_bytes;
  d.verify_checksums = s.uring.verify_checksums;
  d.eviction = s.eviction;
  d.staging_rate_bps = s.calibration_rate_bps;
  d.demand_rate_bps = s.demand_rate_bps;
  return d;
}

KmodDeviceOptions kmod_device_options(const Settings& s) {
  KmodDeviceOptions o;
  o.path = s.kmod.path;
  o.staging_slots = s.staging_slots;
  o.staging_rate_bps = s.calibration_rate_bps;
  o.demand_rate_bps = s.demand_rate_bps;
  return o;
}

}  // namespace tempo
