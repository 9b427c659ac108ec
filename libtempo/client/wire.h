// What the C ABI and tempod share: the stack's views in the C ABI's fixed-layout structs,
// and one message over a SOCK_SEQPACKET socket with at most one descriptor beside it.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "stack/stack.h"
#include "tempo/tempo.h"

namespace tempo {

void to_claim_info(const ClaimView& c, tempo_claim_info* info);
// The view a claim info carries (the daemon's answer to a query): no label, group or
// object count.
void from_claim_info(ClaimId id, const tempo_claim_info& info, ClaimView* out);
void to_counters(const StackStats& all, tempo_counters* s);

// Sends one message (and `pass_fd` when >= 0). flags: MSG_DONTWAIT or 0. The byte count,
// or -errno.
ssize_t send_message(int sock, const void* buf, size_t len, int pass_fd, int flags);
// Receives one message into buf (at most cap bytes; a longer one is -EMSGSIZE) and the
// descriptor beside it into *fd (-1 if none; descriptors beyond one, and any beside an
// empty message or a cut one, are closed). The byte count, 0 when the peer closed (or sent
// an empty message), or -errno.
ssize_t recv_message(int sock, void* buf, size_t cap, int* fd, int flags);

}  // namespace tempo
