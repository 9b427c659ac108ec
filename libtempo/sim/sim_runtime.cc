#include "sim/sim_runtime.h"

namespace tempo {

SimRuntime::SimRuntime(const SimRuntimeConfig& config)
    : device(events, config.device),
      provider(device, clock, config.provider),
      controller(provider, clock, config.controller) {
  controller.set_wakeup([this] { arm_tick(); });
}

SimRuntime::~SimRuntime() {
  if (tick_armed_) events.cancel(tick_event_);
}

void SimRuntime::arm_tick() {
  if (tick_armed_) return;
  tick_armed_ = true;
  tick_event_ = events.schedule_after(controller.config().tick_ns, [this] {
    tick_armed_ = false;
    controller.tick();
    // Ticking with nothing PLANNED would keep virtual time running forever.
    if (controller.stats().planned > 0) arm_tick();
  });
}

}  // namespace tempo
