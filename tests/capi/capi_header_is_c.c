/* Compiled as C11: the public header must be valid C, not only C++. */
#include "tempo/tempo.h"

int capi_header_is_c(void);

int capi_header_is_c(void) {
  struct tempo_object o = {.key = 1, .bytes = 2};
  return (int)(o.key + o.bytes) + TEMPO_CLAIM_FAILED + TEMPO_RETRIEVAL_ORDINARY;
}
