#include "model/exec_model_costs.h"

namespace tempo {

TimeNs ExecModelCosts::prefill_time(uint64_t new_tokens, uint64_t context_tokens) const {
  return model_.prefill_time(new_tokens, context_tokens);
}

TimeNs ExecModelCosts::decode_step_time(uint64_t batch, uint64_t total_context_tokens) const {
  return model_.decode_step_time(batch, total_context_tokens);
}

TimeNs ExecModelCosts::decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                         uint64_t steps) const {
  return model_.decode_steps_time(batch, total_context_tokens, steps);
}

TimeNs ExecModelCosts::retrieval_time(uint64_t bytes) const {
  return retrieval_bps_ > 0 ? model_.retrieval_time(bytes, retrieval_bps_)
                            : model_.retrieval_time(bytes);
}

}  // namespace tempo
