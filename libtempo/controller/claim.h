// A staging claim: a request-scoped record of a reusable-KV hit and its lifecycle. The
// controller's claim book holds one Claim per claim, from report until it is erased (a
// retention window after it ended); it is the only per-claim record: the provider's part
// (objects, commitment, what the TTR projection keeps) is embedded as `staging`, and the
// provider's object records point at it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/object.h"
#include "core/time.h"
#include "provider/provider.h"
#include "runtime/ttu_quantiles.h"

namespace tempo {

// PLANNED -> STAGING -> STAGE_READY -> TRANSFERRING -> RELEASED, plus the outcomes
// CANCELLED, ORDINARY (served by the ordinary path: protection could not be had when
// retrieval was requested, or staging failed after commit and the claim failed over) and
// FAILED (the claim's objects are no longer valid on the SSD tier).
enum class ClaimState : uint8_t {
  kPlanned = 0,
  kStaging = 1,
  kStageReady = 2,
  kTransferring = 3,
  kReleased = 4,
  kCancelled = 5,
  kOrdinary = 6,
  kFailed = 7,
};

std::string_view claim_state_name(ClaimState s);
bool claim_state_terminal(ClaimState s);
// Whether the controller may move a claim from `from` to `to`.
bool claim_transition_legal(ClaimState from, ClaimState to);

struct ClaimTiming {
  TimeNs reported = -1;
  TimeNs committed = -1;
  TimeNs ready = -1;
  TimeNs retrieval_requested = -1;
  TimeNs transfer_begin = -1;
  TimeNs ended = -1;  // released, cancelled, ordinary or failed
};

struct Claim {
  ClaimId id = 0;
  ClaimState state = ClaimState::kPlanned;
  uint64_t bytes = 0;    // unique bytes of the manifest
  uint32_t objects = 0;  // manifest length
  TimeNs ttu = 0;        // latest TTU estimate ...
  TimeNs ttu_at = 0;     // ... and when it was given
  TtuQuantiles spread;   // its distribution, given at the same time (a point if none was)
  bool retrieval_pending = false;
  bool cancel_pending = false;  // committed and cancelled: released once staging/transfer end
  bool deferred = false;        // a commit attempt failed for capacity at least once
  uint32_t deferrals = 0;
  int error = 0;  // kFailed: why
  uint64_t report_seq = 0;
  int64_t rank = -1;            // place in its engine's queue in the latest order, -1 none
  uint64_t behind = 0;          // ... and requests after it in that queue
  std::vector<ObjectKey> keys;  // the manifest's keys in order: extents, ordinary read
  bool ordinary_read = false;   // ORDINARY: its ordinary read was started
  uint32_t group = 0;           // its share group (Controller::set_share), 0 none
  std::string request;          // the engine's request id (label()), for listings
  ClaimTiming timing;
  ClaimStaging staging;  // the provider's part, tracked while PLANNED or committed
};

}  // namespace tempo
