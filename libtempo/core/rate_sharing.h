// Processor sharing with per-flow caps: concurrent flows split an aggregate rate equally,
// and a flow capped below its fair share gives the rest to the others (water-filling).
// The sim device serves its staging and demand flows this way, and the provider's TTR
// projection models the same service discipline.
#pragma once

#include <span>

namespace tempo {

// Writes each flow's rate into `rates` (same length as `caps`). A cap <= 0 means uncapped.
void share_rate(double total, std::span<const double> caps, std::span<double> rates);

}  // namespace tempo
