// The study's starting point for the product's step-cost learner: the linear step costs
// (runtime/step_cost_learner.h) closest to the roofline execution model, in relative error,
// over prefills of 64..16k tokens after 0..16k cached and decode steps of 1..64 sequences.
#pragma once

#include "model/exec_model.h"
#include "runtime/step_cost_learner.h"

namespace tempo {

StepCostCoefficients fit_step_costs(const ExecModel& model, double retrieval_bps);

}  // namespace tempo
