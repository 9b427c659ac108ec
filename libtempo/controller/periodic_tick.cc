#include "controller/periodic_tick.h"

namespace tempo {

PeriodicTick::PeriodicTick(Scheduler& scheduler, Controller& controller)
    : scheduler_(scheduler), controller_(controller) {
  controller_.set_wakeup([this] { arm(); });
}

PeriodicTick::~PeriodicTick() {
  controller_.set_wakeup(nullptr);
  if (armed_) scheduler_.cancel(event_);
}

void PeriodicTick::arm() {
  if (armed_) return;
  armed_ = true;
  event_ = scheduler_.schedule_after(controller_.config().tick_ns, [this] {
    armed_ = false;
    controller_.tick();
    if (controller_.stats().planned > 0) arm();
  });
}

}  // namespace tempo
