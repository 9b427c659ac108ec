// The controller's periodic re-evaluation (default every 50 ms), armed while claims are
// PLANNED: with nothing to evaluate it stops, so a virtual-time run can end. It comes
// sooner when the controller knows a claim falls due before the tick (next_due()).
#pragma once

#include "controller/controller.h"
#include "core/scheduler.h"

namespace tempo {

class PeriodicTick {
 public:
  // Installs itself as the controller's wakeup; the scheduler and controller outlive it.
  PeriodicTick(Scheduler& scheduler, Controller& controller);
  ~PeriodicTick();
  PeriodicTick(const PeriodicTick&) = delete;
  PeriodicTick& operator=(const PeriodicTick&) = delete;

  void arm();

 private:
  Scheduler& scheduler_;
  Controller& controller_;
  uint64_t event_ = 0;
  bool armed_ = false;
  TimeNs armed_at_ = 0;
};

}  // namespace tempo
