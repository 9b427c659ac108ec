/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libtempo's sim device, for tests and simulations: a context made with `device = sim` runs
 * in virtual time that only its caller moves. An engine serving real requests never needs
 * this header (Documentation/c-api.md, "The sim device through the ABI").
 */
#ifndef TEMPO_TEMPO_SIM_H
#define TEMPO_TEMPO_SIM_H

#include "tempo/tempo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Puts objects on the simulated SSD tier: 0, or -EEXIST if one is already there (nothing is
 * added then), -EINVAL a NULL array with a nonzero count. -EOPNOTSUPP on other devices. */
TEMPO_EXPORT int tempo_sim_add_objects(struct tempo_ctx* ctx, const struct tempo_object* objects,
                                       size_t count);
/* Runs virtual time forward by ns: staging, completions and ticks due by then run. -EINVAL
 * a negative ns, -EOPNOTSUPP on other devices, -EOVERFLOW if the clock would pass 2^62 ns
 * (about 146 years). */
TEMPO_EXPORT int tempo_sim_advance(struct tempo_ctx* ctx, int64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* TEMPO_TEMPO_SIM_H */
