#include "controller/claim.h"

namespace tempo {

std::string_view claim_state_name(ClaimState s) {
  switch (s) {
    case ClaimState::kPlanned:
      return "PLANNED";
    case ClaimState::kStaging:
      return "STAGING";
    case ClaimState::kStageReady:
      return "STAGE_READY";
    case ClaimState::kTransferring:
      return "TRANSFERRING";
    case ClaimState::kReleased:
      return "RELEASED";
    case ClaimState::kCancelled:
      return "CANCELLED";
    case ClaimState::kOrdinary:
      return "ORDINARY";
    case ClaimState::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

bool claim_state_terminal(ClaimState s) {
  return s == ClaimState::kReleased || s == ClaimState::kCancelled || s == ClaimState::kOrdinary ||
         s == ClaimState::kFailed;
}

bool claim_transition_legal(ClaimState from, ClaimState to) {
  using S = ClaimState;
  switch (from) {
    case S::kPlanned:
      return to == S::kStaging || to == S::kStageReady || to == S::kCancelled ||
             to == S::kOrdinary || to == S::kFailed;
    case S::kStaging:
      // kOrdinary: staging failed and the claim fails over to the ordinary path.
      return to == S::kStageReady || to == S::kCancelled || to == S::kOrdinary;
    case S::kStageReady:
      return to == S::kTransferring || to == S::kCancelled;
    case S::kTransferring:
      return to == S::kReleased || to == S::kCancelled;
    default:
      return false;
  }
}

}  // namespace tempo
