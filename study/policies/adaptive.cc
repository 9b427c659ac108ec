#include "policies/adaptive.h"

#include <algorithm>
#include <cmath>

namespace tempo {

AdaptivePolicy::AdaptivePolicy(std::vector<std::unique_ptr<EvictionPolicy>> experts,
                               size_t capacity_entries, double learning_rate)
    : experts_(std::move(experts)),
      weights_(experts_.size(), 1.0 / static_cast<double>(experts_.size())),
      histories_(experts_.size()),
      capacity_(capacity_entries),
      lambda_(learning_rate) {}

size_t AdaptivePolicy::capacity() const {
  return capacity_ != 0 ? capacity_ : std::max<size_t>(high_water_, 1);
}

void AdaptivePolicy::learn_from_return(BlockId id) {
  ++tick_;
  auto g = ghosts_.find(id);
  if (g == ghosts_.end()) return;
  // The expert that evicted it was wrong: lower its weight.
  const double d = std::pow(0.005, 1.0 / static_cast<double>(capacity()));
  const double r = std::pow(d, static_cast<double>(tick_ - g->second.evicted_at));
  weights_[g->second.expert] *= std::exp(-lambda_ * r);
  double sum = 0;
  for (double w : weights_) sum += w;
  for (double& w : weights_) w /= sum;
  histories_[g->second.expert].erase(g->second.it);
  ghosts_.erase(g);
}

void AdaptivePolicy::add(BlockId id, uint64_t bytes, TimeNs now) {
  const size_t before = size();
  for (auto& e : experts_) e->add(id, bytes, now);
  if (size() == before) return;
  learn_from_return(id);
  high_water_ = std::max(high_water_, size());
  ++stats_.adds;
}

void AdaptivePolicy::add_with_history(BlockId id, uint64_t bytes, TimeNs now,
                                      const AccessHistory& h) {
  const size_t before = size();
  for (auto& e : experts_) e->add_with_history(id, bytes, now, h);
  if (size() == before) return;
  learn_from_return(id);
  high_water_ = std::max(high_water_, size());
  ++stats_.adds;
}

void AdaptivePolicy::remove(BlockId id) {
  const size_t before = size();
  for (auto& e : experts_) e->remove(id);
  if (size() != before) ++stats_.removes;
}

void AdaptivePolicy::evict(BlockId id) {
  const size_t before = size();
  for (auto& e : experts_) e->evict(id);
  if (size() == before) return;
  ++stats_.removes;
  ++stats_.evictions;
  if (picked_ != id || !picked_by_) return;
  draw_ = next_draw_;
  auto& hist = histories_[*picked_by_];
  hist.push_front(id);
  ghosts_[id] = Ghost{*picked_by_, tick_, hist.begin()};
  while (hist.size() > capacity()) {
    ghosts_.erase(hist.back());
    hist.pop_back();
  }
}

void AdaptivePolicy::record_access(BlockId id, TimeNs now) {
  const uint64_t before = experts_.front()->stats().accesses;
  for (auto& e : experts_) e->record_access(id, now);
  if (experts_.front()->stats().accesses == before) return;
  ++tick_;
  ++stats_.accesses;
}

std::optional<BlockId> AdaptivePolicy::pick_victim() { return choose(std::nullopt); }

std::optional<BlockId> AdaptivePolicy::pick_victim_for(BlockId incoming) {
  return choose(incoming);
}

std::optional<BlockId> AdaptivePolicy::choose(std::optional<BlockId> incoming) {
  if (size() == 0) return std::nullopt;
  ++stats_.victims;
  bool agree = true;
  std::vector<BlockId> choice(experts_.size());
  for (size_t i = 0; i < experts_.size(); ++i) {
    choice[i] = *(incoming ? experts_[i]->pick_victim_for(*incoming) : experts_[i]->pick_victim());
    if (choice[i] != choice[0]) agree = false;
  }
  if (agree) {
    picked_ = choice[0];
    picked_by_.reset();
    return picked_;
  }
  // Draw an expert with probability equal to its weight, from the golden-ratio sequence.
  // The draw is used up only when this victim is evicted, so peeking twice (a prefetcher
  // checking what would go) gives the same answer.
  next_draw_ = draw_ + 0.6180339887498949;
  next_draw_ -= std::floor(next_draw_);
  size_t e = experts_.size() - 1;
  double acc = 0;
  for (size_t i = 0; i < experts_.size(); ++i) {
    acc += weights_[i];
    if (next_draw_ < acc) {
      e = i;
      break;
    }
  }
  picked_ = choice[e];
  picked_by_ = e;
  return picked_;
}

}  // namespace tempo
