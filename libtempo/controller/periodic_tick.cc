#include "controller/periodic_tick.h"

#include <algorithm>

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
  const TimeNs at =
      std::min(scheduler_.now() + controller_.config().tick_ns, controller_.next_due());
  if (armed_ && armed_at_ <= at) return;
  if (armed_) scheduler_.cancel(event_);
  armed_ = true;
  armed_at_ = at;
  event_ = scheduler_.schedule_at(at, [this] {
    armed_ = false;
    controller_.tick();
    if (controller_.stats().planned > 0) arm();
  });
}

}  // namespace tempo
