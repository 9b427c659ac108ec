#include "client/wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tempo {

void to_claim_info(const ClaimView& c, tempo_claim_info* info) {
  *info = tempo_claim_info{};
  info->state = static_cast<uint32_t>(c.state);
  info->error = c.error;
  info->bytes = c.bytes;
  info->ttu_ns = c.ttu;
  info->laxity_ns = c.laxity.value_or(TEMPO_LAXITY_NONE);
  info->flags = (c.cancel_pending ? TEMPO_CLAIM_F_CANCEL_PENDING : 0u) |
                (c.never_fits ? TEMPO_CLAIM_F_NEVER_FITS : 0u);
  info->deferrals = c.deferrals;
  info->reported_ns = c.timing.reported;
  info->committed_ns = c.timing.committed;
  info->ready_ns = c.timing.ready;
  info->retrieval_requested_ns = c.timing.retrieval_requested;
  info->transfer_begin_ns = c.timing.transfer_begin;
  info->ended_ns = c.timing.ended;
  info->ttr_ns = c.ttr.value_or(TEMPO_TTR_NONE);
  info->resident_bytes = c.resident_bytes;
}

void from_claim_info(ClaimId id, const tempo_claim_info& info, ClaimView* out) {
  *out = ClaimView{};
  out->id = id;
  out->state = static_cast<ClaimState>(info.state);
  out->error = info.error;
  out->bytes = info.bytes;
  out->deferrals = info.deferrals;
  out->cancel_pending = (info.flags & TEMPO_CLAIM_F_CANCEL_PENDING) != 0;
  out->never_fits = (info.flags & TEMPO_CLAIM_F_NEVER_FITS) != 0;
  out->ttu = info.ttu_ns;
  if (info.ttr_ns != TEMPO_TTR_NONE) out->ttr = info.ttr_ns;
  if (info.laxity_ns != TEMPO_LAXITY_NONE) out->laxity = info.laxity_ns;
  out->resident_bytes = info.resident_bytes;
  out->timing = {info.reported_ns,       info.committed_ns,
                 info.ready_ns,          info.retrieval_requested_ns,
                 info.transfer_begin_ns, info.ended_ns};
}

void to_counters(const StackStats& all, tempo_counters* s) {
  const ControllerStats& c = all.controller;
  const ProviderStats& p = all.provider;
  const DeviceStats& d = all.device_stats;
  *s = tempo_counters{};
  s->now_ns = all.now;
  s->budget_bytes = p.budget_bytes;
  s->ledger_bytes = p.ledger_bytes;
  s->reserved_bytes = p.reserved_bytes;
  s->claims_reported = c.reported;
  s->claims_committed = c.committed;
  s->deferred_claims = c.deferred_claims;
  s->capacity_deferral_attempts = c.capacity_deferrals;
  s->claims_ordinary = c.ordinary;
  s->claims_failed_over = c.failovers;
  s->claims_cancelled = c.cancelled;
  s->claims_released = c.released;
  s->claims_failed = c.failed;
  s->claims_planned = c.planned;
  s->claims_live = c.live;
  s->stage_ops = p.stage_completed;
  s->staged_bytes = p.staged_bytes;
  s->stage_errors = p.stage_failed;
  s->outstanding_ops = p.outstanding_ops;
  s->fast_tier_capacity_bytes = all.fast_tier_capacity_bytes;
  s->fast_tier_used_bytes = d.resident_bytes;
  s->pinned_bytes = d.pinned_bytes;
  s->evictions = d.evictions;
  s->demand_bytes = d.demand_bytes;
  s->effective_rate_bps = p.effective_rate_bps;
  s->protected_gib_seconds = p.ledger_byte_seconds / double(1ull << 30);
}

ssize_t send_message(int sock, const void* buf, size_t len, int pass_fd, int flags) {
  iovec iov{const_cast<void*>(buf), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass_fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  while (true) {
    const ssize_t n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

ssize_t recv_message(int sock, void* buf, size_t cap, int* fd, int flags) {
  *fd = -1;
  iovec iov{buf, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*fd < 0)
        *fd = got;
      else
        close(got);
    }
  }
  // A cut message hands no descriptor on, nor does an empty one: the caller takes it for
  // the peer's close, so one sent beside it would be left open.
  const bool cut = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  if ((cut || n == 0) && *fd >= 0) {
    close(*fd);
    *fd = -1;
  }
  return cut ? -EMSGSIZE : n;
}

}  // namespace tempo
