// The two calls that wait on a stack for a caller outside its driver: a claim's readiness
// and an ordinary read. The context (stack/context.h) and the in-process claim surface
// (surface/stack_surface.h) both wait through these; waiting re-checks after every round of
// the driver that changed something (Driver::wait_until), never by polling.
#pragma once

#include "stack/driver.h"
#include "stack/stack.h"

namespace tempo {

// Waits up to `timeout` for claim `id` to be stage-ready (kReady) or to take the ordinary
// path (kOrdinary). -ETIMEDOUT, -ENOENT, -ECANCELED (released or cancelled), the claim's
// error (FAILED), -EINVAL negative timeout, -EOVERFLOW when now + timeout passes
// kMaxTimeNs. On the virtual driver the wait runs virtual time forward.
int wait_claim_ready(Driver& driver, Stack& stack, ClaimId id, TimeNs timeout,
                     RetrievalOutcome* outcome);
// The ordinary read of an ORDINARY claim, returning once its objects are read (at most a
// minute): 0 or the read's error; -ENOENT unknown, -EINVAL not ORDINARY or read already,
// -ETIMEDOUT.
int read_ordinary(Driver& driver, Stack& stack, ClaimId id);

}  // namespace tempo
