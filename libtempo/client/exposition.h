// What operators read of a stack, one way for every reader, from the C ABI's counters and
// the protocol's timeliness record: the stats document (JSON: the control socket's
// "stats", `tempoctl stats --daemon`) and the Prometheus text exposition, version 0.0.4
// (`tempoctl metrics`, tempod's metrics listener). Counters end in _total; the rest are
// gauges; the commit margin is a histogram in seconds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "client/tempod_proto.h"
#include "stack/stack.h"

namespace tempo {

void to_timeliness(const ControllerStats& c, tempod_timeliness* t);

// The stats document: every counter under its tempo_counters name, the device, and the
// timeliness fields (retrievals_on_time, retrievals_late, commit_margin_sum_ns,
// commit_margin_buckets).
nlohmann::json counters_doc(const std::string& device, const tempo_counters& s,
                            const tempod_timeliness& t);

// The Prometheus text exposition.
std::string prometheus_text(const tempo_counters& s, const tempod_timeliness& t);
// The same metrics as one JSON object (`tempoctl metrics --json`).
nlohmann::json prometheus_doc(const tempo_counters& s, const tempod_timeliness& t);

}  // namespace tempo
