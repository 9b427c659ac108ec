// Long-document question-answering sets: one question per document, the document being
// the reusable prefix. Synthetic stand-ins for the paper's NarrativeQA and LooGLE
// contexts (the texts are not needed, only token counts and prefix identity); see
// Documentation/workloads.md for how each generator draws its lengths.
#pragma once

#include <cstdint>
#include <vector>

namespace tempo {

struct Document {
  uint32_t index = 0;       // in generation order (NarrativeQA: grouped short..long)
  uint32_t group = 0;       // NarrativeQA length group 0 (short), 1, 2 (long); else 0
  uint64_t content_id = 0;  // identity of the text: equal ids share chunk keys
  uint64_t document_tokens = 0;
  uint32_t question_tokens = 0;  // question and prompt template, after the document
  uint64_t input_tokens() const { return document_tokens + question_tokens; }
};

// NarrativeQA-like set in request order. `count` documents (12 in the paper) are drawn
// round-robin from three length groups of input tokens, [16078, 24000], [24001, 40000]
// and [40001, 67744]; the shortest document of the first group is pinned to 16,078 input
// tokens and the longest of the last to 67,744 (the paper's span), then the order is a
// seeded shuffle, fixed for the seed. Questions take 16-48 tokens.
std::vector<Document> narrativeqa_documents(uint64_t seed, uint32_t count = 12);

// LooGLE-like set in request order: `count` documents (16 in the paper's Figure 6) with
// input tokens log-normal around a median of 24,000 (sigma 0.3), clamped to
// [12000, 48000], questions of 24-96 tokens.
std::vector<Document> loogle_documents(uint64_t seed, uint32_t count = 16);

}  // namespace tempo
