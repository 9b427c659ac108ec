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

/* ABI 0.7: the sim device as a sub-object of its context (tempo.h, "Per-device
 * sub-objects": it borrows the context). */
struct tempo_sim;

/* The sim context's virtual time and SSD tier: 0 and *out, -EOPNOTSUPP (with a log line) on
 * other devices, -EINVAL a NULL context or out. */
TEMPO_EXPORT int tempo_ctx_get_sim(struct tempo_ctx* ctx, struct tempo_sim** out);
/* tempo_sim_add_objects over an array of elements of object_size bytes (pass sizeof(struct
 * tempo_object)). -EINVAL an object_size below 16 (the 0.1 struct) or above
 * TEMPO_STRUCT_SIZE_MAX, or an element's bytes beyond the struct this library knows that are
 * not zero; otherwise tempo_sim_add_objects' errors. */
TEMPO_EXPORT int tempo_sim_add_objects_sized(struct tempo_sim* sim,
                                             const struct tempo_object* objects, size_t count,
                                             size_t object_size);
/* tempo_sim_advance on the sim: runs virtual time forward by ns (its errors). */
TEMPO_EXPORT int tempo_sim_run(struct tempo_sim* sim, int64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* TEMPO_TEMPO_SIM_H */
