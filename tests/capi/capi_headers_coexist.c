/* Compiled as C: libtempo's public headers and tempo.ko's uapi header in one translation
 * unit, as a tool that drives both includes them. Any clash of names fails the build. */
#include <linux/tempo.h>

#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

_Static_assert(sizeof(struct tempo_counters) == 208, "libtempo's counters");
_Static_assert(sizeof(struct tempo_stats) == 192, "tempo.ko's counters (uapi)");
_Static_assert(sizeof(struct tempo_claim_info) == 104, "the 0.3 claim view");

int capi_headers_coexist(void);

int capi_headers_coexist(void) {
  struct tempo_counters library = {.claims_reported = 1};
  struct tempo_stats module = {0};
  return (int)library.claims_reported + (int)sizeof(module.evictions);
}
