// Metadata-only projection of a staging queue: operations in issue order, at most `slots`
// in service at once, sharing an aggregate rate equally (processor sharing). Gives each
// operation's completion time; nothing is read or reserved.
#pragma once

#include <span>
#include <vector>

#include "core/time.h"

namespace tempo {

// `remaining[i]` is the bytes operation i still has to move (issue order). Returns each
// operation's completion, in ns from now, when served at `rate_bps` with `slots` slots.
std::vector<TimeNs> project_completions(std::span<const double> remaining, uint32_t slots,
                                        double rate_bps);

// Advances the same model by `dt`: subtracts the bytes each operation would have moved.
// Operations the model finishes stay at 0 (their real completion has not been seen yet).
void advance_projection(std::span<double> remaining, uint32_t slots, double rate_bps, TimeNs dt);

}  // namespace tempo
