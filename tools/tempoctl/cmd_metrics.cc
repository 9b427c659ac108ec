// tempoctl metrics, claims --daemon and stats --daemon: what a tempod serves to operators.
//
// tempoctl metrics: a tempod's counters as a Prometheus text exposition (version 0.0.4),
// for a node-exporter textfile (`tempoctl metrics > /var/lib/node_exporter/tempo.prom`) or
// a scrape wrapper. Counters end in _total; the rest are gauges.
#include <cstdio>
#include <cstring>
#include <iterator>

#include "cli.h"
#include "client/daemon_client.h"
#include "client/exposition.h"
#include "client/tempod_proto.h"
#include "controller/claim.h"

namespace tempo::ctl {

// A tempod's claims, page by page, with the engine each belongs to.
int daemon_claims(const Args& args) {
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(args.get("daemon"), "tempoctl", &client, &error) != 0)
    return fail("claims", error);
  json claims = json::array();
  std::vector<DaemonClient::ClaimEntry> page;
  for (tempo_claim_id after = 0;;) {
    if (const int r = client->claims(after, TEMPOD_MAX_CLAIMS, &page); r != 0)
      return fail("claims", std::string("claims: ") + std::strerror(-r));
    for (const DaemonClient::ClaimEntry& e : page) {
      if (e.id <= after) return fail("claims", "claim ids from tempod do not grow");
      after = e.id;
      const tempo_claim_info& i = e.info;
      const bool planned = i.laxity_ns != TEMPO_LAXITY_NONE;
      auto when = [](int64_t ns) { return ns >= 0 ? json(ns) : json(nullptr); };
      claims.push_back(
          json{{"id", e.id},
               {"state", std::string(claim_state_name(static_cast<ClaimState>(i.state)))},
               {"bytes", i.bytes},
               {"ttu_ns", i.ttu_ns},
               {"ttr_ns", planned ? json(i.ttu_ns - i.laxity_ns) : json(nullptr)},
               {"laxity_ns", planned ? json(i.laxity_ns) : json(nullptr)},
               {"deferrals", i.deferrals},
               {"cancel_pending", (i.flags & TEMPO_CLAIM_F_CANCEL_PENDING) != 0},
               {"never_fits", (i.flags & TEMPO_CLAIM_F_NEVER_FITS) != 0},
               {"error", i.error},
               {"engine", e.engine},
               {"client", e.client},
               {"request", e.request},
               {"reported_ns", i.reported_ns},
               {"committed_ns", when(i.committed_ns)},
               {"ready_ns", when(i.ready_ns)},
               {"retrieval_requested_ns", when(i.retrieval_requested_ns)},
               {"transfer_begin_ns", when(i.transfer_begin_ns)},
               {"ended_ns", when(i.ended_ns)}});
    }
    if (page.size() < TEMPOD_MAX_CLAIMS) break;
  }
  return print_claims(args, claims);
}

namespace {

// The counters and timeliness of the tempod at --daemon (default /run/tempo/tempod.sock),
// and its device. 0, or the exit code of the failure message printed for `cmd`.
int daemon_counters(const Args& args, const char* cmd, std::string* device, tempo_counters* s,
                    tempod_timeliness* t) {
  const std::string socket = args.get("daemon", "/run/tempo/tempod.sock");
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(socket, "tempoctl", &client, &error) != 0) return fail(cmd, error);
  if (const int r = client->stats(s); r != 0)
    return fail(cmd, std::string("stats: ") + std::strerror(-r));
  if (const int r = client->timeliness(t); r != 0)
    return fail(cmd, std::string("timeliness: ") + std::strerror(-r));
  *device = client->device();
  return 0;
}

}  // namespace

json daemon_stats(const Args& args, int* status) {
  std::string device;
  tempo_counters s{};
  tempod_timeliness t{};
  *status = daemon_counters(args, "stats", &device, &s, &t);
  return *status == 0 ? counters_doc(device, s, t) : json(nullptr);
}

int cmd_metrics(const Args& args) {
  std::string device;
  tempo_counters s{};
  tempod_timeliness t{};
  if (const int r = daemon_counters(args, "metrics", &device, &s, &t); r != 0) return r;
  if (args.has("json")) {
    print_json(prometheus_doc(s, t));
    return 0;
  }
  std::fputs(prometheus_text(s, t).c_str(), stdout);
  return 0;
}

}  // namespace tempo::ctl
