#include "replay_engine.h"

#include <algorithm>
#include <stdexcept>

namespace tempo {

void ReplayEngine::first_token(LiveRequest& l) {
  prefilling_ = kNone;
  l.rec.timing.first_token = now();
  save_computed(l);
  l.generated = 1;
  if (l.generated >= l.req->output_tokens)
    finish(l);
  else
    l.phase = RequestPhase::kDecoding;
  step();
}

void ReplayEngine::step() {
  if (iter_pos_ < iter_ready_.size()) {
    prefilling_ = iter_ready_[iter_pos_++];
    LiveRequest& l = live_[prefilling_];
    l.rec.retrieval_start = now();
    if (layered_ && l.rec.kv_bytes > 0) return run_group(l, 0);
    TimeNs dur = 0;
    if (l.rec.kv_bytes > 0) {
      if (l.rec.path == RetrievalPath::kStaged) {
        if (st_.claims().transfer_begin(l.claim) != 0)
          throw std::logic_error("replay: transfer of a claim that is not stage-ready");
        copied_bytes_ += st_.copy_out(l.claim);
      }
      dur = costs_.retrieval_time(l.rec.kv_bytes * cfg_.byte_scale);
    }
    busy_until_ = now() + dur + costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens);
    st_.driver().schedule_after(dur, [this, &l] {
      l.rec.retrieval_end = now();
      l.retrieved = true;
      if (l.rec.kv_bytes > 0 && l.rec.path == RetrievalPath::kStaged) {
        st_.claims().transfer_end(l.claim);
        record_claim(l);
      }
      const TimeNs prefill = costs_.prefill_time(l.uncached_tokens, l.rec.cached_tokens);
      st_.driver().schedule_after(prefill, [this, &l, prefill, begun = now()] {
        runtime_.step_spread().record(prefill, now() - begun);
        first_token(l);
      });
    });
    return;
  }
  std::vector<size_t> batch;
  uint64_t context = 0;
  for (size_t i : iter_batch_) {
    if (live_[i].phase != RequestPhase::kDecoding) continue;
    batch.push_back(i);
    context += live_[i].req->prompt_tokens + live_[i].generated;
  }
  if (batch.empty()) return end_iteration();
  const TimeNs predicted = costs_.decode_step_time(batch.size(), context);
  busy_until_ = now() + predicted;
  decoding_ = batch;
  st_.driver().schedule_after(predicted, [this, batch, predicted, begun = now()] {
    decoding_.clear();
    runtime_.step_spread().record(predicted, now() - begun);
    for (size_t i : batch) {
      LiveRequest& l = live_[i];
      if (++l.generated >= l.req->output_tokens) finish(l);
    }
    end_iteration();
  });
}

void ReplayEngine::end_iteration() {
  gpu_busy_ = false;
  start_iteration();
}

void ReplayEngine::finish(LiveRequest& l) {
  l.phase = RequestPhase::kDone;
  l.rec.timing.finish = now();
  l.rec.timing.output_tokens = l.generated;
  runtime_.history().record(l.generated);
  std::erase(running_, static_cast<size_t>(&l - live_.data()));
  kv_used_ -= kv_tokens(l);
  ++finished_;
}

}  // namespace tempo
