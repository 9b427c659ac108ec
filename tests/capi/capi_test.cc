#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capi_ctx.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"

extern "C" int capi_header_is_c(void);
extern "C" int capi_headers_coexist(void);

namespace {

Ctx small(const char* policy) { return Ctx(small_config(policy)); }

TEST(CApi, VersionAndHeader) {
  EXPECT_EQ(std::string(tempo_version())
                .rfind(std::to_string(TEMPO_VERSION_MAJOR) + "." +
                           std::to_string(TEMPO_VERSION_MINOR) + ".",
                       0),
            0u);  // tests/capi/abi_check.py checks it against libtempo.map
  EXPECT_EQ(tempo_version_check(TEMPO_VERSION_MAJOR, TEMPO_VERSION_MINOR), 0);
  EXPECT_EQ(tempo_version_check(TEMPO_VERSION_MAJOR + 1, 0), -EOPNOTSUPP);
  EXPECT_EQ(capi_header_is_c(), 3 + 7 + 2);
  EXPECT_EQ(capi_headers_coexist(), 1 + 8);
}

TEST(CApi, ConfigErrorsNameTheKeyAndTheAcceptedValues) {
  tempo_config* cfg = nullptr;
  ASSERT_EQ(tempo_config_new(&cfg), 0);
  EXPECT_EQ(tempo_config_set(cfg, "policy", "sometimes"), -EINVAL);
  EXPECT_NE(std::string(tempo_config_error(cfg)).find("'policy'"), std::string::npos);
  EXPECT_NE(std::string(tempo_config_error(cfg)).find("queue-K"), std::string::npos);
  EXPECT_EQ(tempo_config_set(cfg, "no_such_key", "1"), -EINVAL);
  EXPECT_NE(std::string(tempo_config_error(cfg)).find("unknown key 'no_such_key'"),
            std::string::npos);
  EXPECT_EQ(tempo_config_set(cfg, "budget_bytes", "-5"), -EINVAL);
  EXPECT_EQ(tempo_config_set(cfg, "tick", "soon"), -EINVAL);
  EXPECT_EQ(tempo_config_set(cfg, "fast_tier_bytes", "1GiB"), 0);
  EXPECT_EQ(tempo_config_set(cfg, "budget_bytes", "2GiB"), 0);
  tempo_ctx* ctx = nullptr;
  EXPECT_EQ(tempo_ctx_new(cfg, &ctx), -EINVAL);  // budget above the fast tier
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(tempo_config_error(cfg)).find("budget_bytes"), std::string::npos);
  EXPECT_EQ(tempo_config_set(nullptr, "policy", "tempo"), -EINVAL);
  EXPECT_EQ(tempo_config_set(cfg, nullptr, "x"), -EINVAL);
  tempo_config_free(cfg);
}

TEST(CApi, FlagsTellCancelPendingAndClaimsThatNeverFit) {
  Ctx c = small("demand");
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 60; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  tempo_claim_id big = 0, moving = 0;
  tempo_claim_info info{};
  // 6000 B against a 5000 B budget: never commits, whatever is released.
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 60, 1'000'000'000, &big), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, big, &info, sizeof info), 0);
  EXPECT_EQ(info.flags, TEMPO_CLAIM_F_NEVER_FITS);
  EXPECT_NE(info.laxity_ns, TEMPO_LAXITY_NONE);
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), 5, 0, &moving), 0);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c.ctx, moving, &outcome), 0);
  ASSERT_EQ(tempo_claim_wait_ready(c.ctx, moving, 10'000'000'000, &outcome), 0);
  ASSERT_EQ(tempo_claim_transfer_begin(c.ctx, moving), 0);
  ASSERT_EQ(tempo_claim_cancel(c.ctx, moving), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, moving, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_TRANSFERRING);
  EXPECT_EQ(info.flags, TEMPO_CLAIM_F_CANCEL_PENDING);
  ASSERT_EQ(tempo_claim_transfer_end(c.ctx, moving), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, moving, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_CANCELLED);
}

TEST(CApi, ClaimLifecycleOnTheSimDevice) {
  Ctx c = small("tempo");
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 5; ++k) objs.push_back({k, 100});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  EXPECT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), 1), -EEXIST);
  tempo_claim_id id = 0;
  // 500 B: TTR 0.5 s; TTU 2 s: commits at 1.5 s, ready at 2 s.
  ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), objs.size(), 2'000'000'000, &id), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.laxity_ns, 1'500'000'000);
  ASSERT_EQ(tempo_sim_advance(c.ctx, 2'000'000'000), 0);
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_STAGE_READY);
  EXPECT_EQ(info.laxity_ns, TEMPO_LAXITY_NONE);  // only a PLANNED claim has laxity
  EXPECT_EQ(info.flags, 0u);
  EXPECT_EQ(info.committed_ns, 1'500'000'000);
  EXPECT_EQ(info.ready_ns, 2'000'000'000);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c.ctx, id, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  ASSERT_EQ(tempo_claim_transfer_begin(c.ctx, id), 0);
  ASSERT_EQ(tempo_claim_transfer_end(c.ctx, id), 0);
  EXPECT_EQ(tempo_claim_transfer_end(c.ctx, id), -EINVAL);  // double release
  EXPECT_EQ(tempo_claim_cancel(c.ctx, id), -EINVAL);        // cancel after transfer
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(c.ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.claims_released, 1u);
  EXPECT_EQ(s.staged_bytes, 500u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_DOUBLE_EQ(s.protected_gib_seconds, 500.0 * 0.5 / double(1ull << 30));
}

// ControllerTest.ALayerWiseClaimCommitsLaterAndItsGroupsStillLandInTime through the ABI:
// eight 100 B objects, two slots sharing 1000 B/s (pairs land 0.2 s apart), TTU 2 s.
TEST(CApi, ALayerWiseClaimCommitsLaterThanTheSameClaimWithout) {
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 8; ++k) objs.push_back({k, 100});
  auto run = [&](uint32_t groups, tempo_claim_info* info) {
    Ctx c = small("tempo");
    ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(c.ctx, objs.data(), objs.size(), 2'000'000'000, &id), 0);
    if (groups > 1) {
      ASSERT_EQ(tempo_claim_set_layers(c.ctx, id, groups, 200'000'000), 0);
    }
    ASSERT_EQ(tempo_claim_query(c.ctx, id, info, sizeof *info), 0);
    const int64_t planned_ttr = info->ttr_ns;
    ASSERT_EQ(tempo_sim_advance(c.ctx, 3'000'000'000), 0);
    ASSERT_EQ(tempo_claim_query(c.ctx, id, info, sizeof *info), 0);
    info->ttr_ns = planned_ttr;
    // Committed: a later call changes nothing.
    EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 1, 0), 0);
  };
  tempo_claim_info whole{}, layered{};
  run(1, &whole);
  run(4, &layered);
  // Whole claim: TTR 0.8 s, commit at 1.2 s, ready at 2.0 s.
  EXPECT_EQ(whole.ttr_ns, 800'000'000);
  EXPECT_EQ(whole.committed_ns, 1'200'000'000);
  EXPECT_EQ(whole.ready_ns, 2'000'000'000);
  // Four groups 200 ms apart: lead TTR max(0.2, 0.4 - 0.2, 0.6 - 0.4, 0.8 - 0.6) = 0.2 s,
  // commit at 1.8 s; its last group lands at 2.6 s = 2.0 + 3 x 0.2 s, when prefill needs it.
  EXPECT_EQ(layered.ttr_ns, 200'000'000);
  EXPECT_EQ(layered.committed_ns, 1'800'000'000);
  EXPECT_EQ(layered.ready_ns, 2'600'000'000);
  EXPECT_EQ(layered.state, TEMPO_CLAIM_STAGE_READY);
}

TEST(CApi, SetLayersRefusesWhatItCannotMean) {
  Ctx c = small("tempo");
  const tempo_object objs[] = {{1, 100}, {2, 100}};
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs, 2), 0);
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c.ctx, objs, 2, 10'000'000'000, &id), 0);
  EXPECT_EQ(tempo_claim_set_layers(nullptr, id, 2, 0), -EINVAL);
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id + 1, 2, 0), -ENOENT);
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 0, 0), -EINVAL);   // no group
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 3, 0), -EINVAL);   // more groups than objects
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 2, -1), -EINVAL);  // needed before retrieval
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 2, INT64_C(1) << 62), -EOVERFLOW);
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 2, INT64_MAX), -EOVERFLOW);
  // Refused calls left the claim whole: its TTR is both objects' (two slots sharing 1000 B/s).
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.ttr_ns, 200'000'000);
  ASSERT_EQ(tempo_claim_cancel(c.ctx, id), 0);
  EXPECT_EQ(tempo_claim_set_layers(c.ctx, id, 2, 0), -EINVAL);  // ended
}

TEST(CApi, BadArgumentsAreErrorsNotCrashes) {
  Ctx c = small("demand");
  tempo_claim_id id = 0;
  tempo_object o{1, 100};
  EXPECT_EQ(tempo_claim_report(c.ctx, nullptr, 1, 0, &id), -EINVAL);
  EXPECT_EQ(tempo_claim_report(c.ctx, &o, 1, 0, nullptr), -EINVAL);
  EXPECT_EQ(tempo_claim_report(c.ctx, &o, 0, 0, &id), -EINVAL);
  EXPECT_EQ(tempo_claim_report(nullptr, &o, 1, 0, &id), -EINVAL);
  EXPECT_EQ(tempo_claim_revise(c.ctx, 77, 0), -ENOENT);
  EXPECT_EQ(tempo_claim_query(c.ctx, 77, nullptr, sizeof(tempo_claim_info)), -EINVAL);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_query(c.ctx, 77, &info, sizeof info), -ENOENT);
  int outcome = 0;
  EXPECT_EQ(tempo_claim_request_retrieval(c.ctx, 77, &outcome), -ENOENT);
  EXPECT_EQ(tempo_claim_request_retrieval(c.ctx, 77, nullptr), -EINVAL);
  const tempo_claim_id order[] = {77};
  EXPECT_EQ(tempo_order_update(c.ctx, order, 1), -ENOENT);
  EXPECT_EQ(tempo_order_update(c.ctx, nullptr, 1), -EINVAL);
  EXPECT_EQ(tempo_sim_advance(c.ctx, -1), -EINVAL);
  EXPECT_EQ(tempo_ctx_stats(c.ctx, nullptr, sizeof(tempo_counters)), -EINVAL);
  // An object the SSD tier does not hold: the claim fails at its commit.
  ASSERT_EQ(tempo_claim_report(c.ctx, &o, 1, 0, &id), 0);
  EXPECT_EQ(tempo_claim_request_retrieval(c.ctx, id, &outcome), -ENOENT);
  ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_FAILED);
  EXPECT_EQ(info.error, -ENOENT);
}

TEST(CApi, ClosingTheContextCancelsLiveClaims) {
  std::vector<std::string> logs;
  {
    Ctx c = small("immediate");
    tempo_ctx_set_log_fn(
        c.ctx,
        [](void* data, int, const char* m) {
          static_cast<std::vector<std::string>*>(data)->push_back(m);
        },
        &logs);
    tempo_object o{1, 100};
    ASSERT_EQ(tempo_sim_add_objects(c.ctx, &o, 1), 0);
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(c.ctx, &o, 1, 0, &id), 0);
    tempo_ctx_unref(tempo_ctx_ref(c.ctx));  // not the last reference: nothing happens
    tempo_claim_info info{};
    ASSERT_EQ(tempo_claim_query(c.ctx, id, &info, sizeof info), 0);
    EXPECT_EQ(info.state, TEMPO_CLAIM_STAGING);
    EXPECT_TRUE(logs.empty());
  }
  EXPECT_EQ(logs, std::vector<std::string>{"tempo: context closed with 1 live claims"});
}

TEST(CApi, ConcurrentCallersAreSerialised) {
  Ctx c = small("immediate");
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 64; ++k) objs.push_back({k, 10});
  ASSERT_EQ(tempo_sim_add_objects(c.ctx, objs.data(), objs.size()), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        tempo_claim_id id = 0;
        const tempo_object* first = &objs[static_cast<size_t>((t * 16 + i) % 60)];
        if (tempo_claim_report(c.ctx, first, 4, 0, &id) != 0) continue;
        tempo_sim_advance(c.ctx, 100'000'000);
        int outcome = 0;
        if (tempo_claim_request_retrieval(c.ctx, id, &outcome) == 0 &&
            outcome == TEMPO_RETRIEVAL_READY && tempo_claim_transfer_begin(c.ctx, id) == 0)
          tempo_claim_transfer_end(c.ctx, id);
        else
          tempo_claim_cancel(c.ctx, id);
      }
    });
  }
  for (auto& th : threads) th.join();
  tempo_sim_advance(c.ctx, 10'000'000'000);
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(c.ctx, &s, sizeof s), 0);
  EXPECT_EQ(s.claims_reported, 800u);
  EXPECT_EQ(s.claims_live, 0u);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.claims_released + s.claims_cancelled, 800u);
}

}  // namespace
