#include "workload/documents.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "core/rng.h"

namespace tempo {

namespace {

struct Range {
  uint64_t lo, hi;
};
constexpr std::array<Range, 3> kNarrativeQaGroups = {Range{16'078, 24'000}, Range{24'001, 40'000},
                                                     Range{40'001, 67'744}};

Document make_document(Rng& rng, uint32_t index, uint32_t group, uint64_t input_tokens,
                       uint32_t question_tokens) {
  Document d;
  d.index = index;
  d.group = group;
  d.content_id = rng.next();
  d.question_tokens = question_tokens;
  d.document_tokens = input_tokens - question_tokens;
  return d;
}

void shuffle(std::vector<Document>& docs, Rng& rng) {
  for (size_t i = docs.size(); i > 1; --i) {
    std::swap(docs[i - 1], docs[rng.uniform_int(0, i - 1)]);
  }
}

}  // namespace

std::vector<Document> narrativeqa_documents(uint64_t seed, uint32_t count) {
  Rng rng(seed);
  std::vector<Document> docs;
  docs.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t group = i % 3;
    const Range r = kNarrativeQaGroups[group];
    const uint64_t input = rng.uniform_int(r.lo, r.hi);
    const auto question = static_cast<uint32_t>(rng.uniform_int(16, 48));
    docs.push_back(make_document(rng, 0, group, input, question));
  }
  // Pin the span: the shortest of group 0 and the longest of group 2.
  auto pin = [&](uint32_t group, bool shortest, uint64_t input) {
    Document* pick = nullptr;
    for (Document& d : docs) {
      if (d.group != group) continue;
      if (!pick || (shortest ? d.input_tokens() < pick->input_tokens()
                             : d.input_tokens() > pick->input_tokens())) {
        pick = &d;
      }
    }
    if (pick) pick->document_tokens = input - pick->question_tokens;
  };
  pin(0, true, kNarrativeQaGroups[0].lo);
  pin(2, false, kNarrativeQaGroups[2].hi);
  // Number in group order (short..long), then fix the request order by the seed.
  std::stable_sort(docs.begin(), docs.end(),
                   [](const Document& a, const Document& b) { return a.group < b.group; });
  for (uint32_t i = 0; i < docs.size(); ++i) docs[i].index = i;
  shuffle(docs, rng);
  return docs;
}

std::vector<Document> loogle_documents(uint64_t seed, uint32_t count) {
  Rng rng(seed);
  std::vector<Document> docs;
  docs.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const double drawn = 24'000.0 * std::exp(0.3 * rng.normal());
    const auto input = static_cast<uint64_t>(std::clamp(std::round(drawn), 12'000.0, 48'000.0));
    const auto question = static_cast<uint32_t>(rng.uniform_int(24, 96));
    docs.push_back(make_document(rng, i, 0, input, question));
  }
  return docs;
}

}  // namespace tempo
