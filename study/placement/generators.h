// Seeded workload generators for the placement study (paper Table I), plus the adapter
// from request-trace records (the replay issue's JSONL format). The same seed gives the
// same workload on every platform (no std distributions: their output is unspecified).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placement/workload.h"
#include "workload/request.h"

namespace tempo::placement {

// Long multi-turn chat: each session's context grows by its own turns (recency).
struct ChatParams {
  uint32_t sessions = 6;
  uint64_t accesses_per_session = 4000;  // turns are added while they fit
  uint32_t block_tokens = 16;
  uint32_t min_user_blocks = 1, max_user_blocks = 4;
  uint32_t min_output_tokens = 32, max_output_tokens = 128;
  double think_ms = 4000;   // mean think time between a reply and the next turn
  double stagger_ms = 700;  // session start offsets
  uint64_t seed = 1;
};

// Agent loop: a shared system+tools prompt, a sliding window of recent steps, and
// occasional revisits of an older step's tool output.
struct AgentParams {
  uint32_t sessions = 4;
  uint64_t accesses_per_session = 6000;
  uint32_t block_tokens = 16;
  uint32_t system_blocks = 24;  // shared by every agent
  uint32_t window_steps = 4;    // recent steps kept in context
  double revisit_probability = 0.35;
  uint32_t min_tool_blocks = 1, max_tool_blocks = 6;
  uint32_t min_output_tokens = 16, max_output_tokens = 48;
  double think_ms = 1500;  // tool execution time
  double stagger_ms = 400;
  uint64_t seed = 1;
};

// Repeated document QA: a shared instruction prefix and Zipf-popular documents.
struct DocQaParams {
  uint32_t users = 8;
  uint64_t total_accesses = 24000;
  uint32_t block_tokens = 16;
  uint32_t instruction_blocks = 4;
  uint32_t documents = 16;
  uint32_t min_doc_blocks = 16, max_doc_blocks = 48;
  double zipf_s = 1.1;
  uint32_t min_output_tokens = 16, max_output_tokens = 64;
  double think_ms = 3000;
  double stagger_ms = 300;
  uint64_t seed = 1;
};

Workload make_chat(const ChatParams& p);
Workload make_agent(const AgentParams& p);
Workload make_docqa(const DocQaParams& p);

// A request trace (the JSONL format, parsed by workload/trace.h) as a placement workload:
// each request becomes its own session, its context is its prompt's full chunks (one
// block per chunk key; a key not seen before is computed in prefill), the prompt tokens
// beyond those chunks are new input, and its output fills fresh blocks. Block size is
// the trace's chunk size. -EINVAL when the requests disagree on chunk size.
int make_from_trace(const std::vector<tempo::Request>& trace, Workload* out);

// A named default workload: "chat", "chat-single" (one 24,000-access session), "agent",
// "docqa". Returns -EINVAL for another name.
int make_named_workload(const std::string& name, uint64_t seed, Workload* out);
std::vector<std::string> named_workloads();

}  // namespace tempo::placement
