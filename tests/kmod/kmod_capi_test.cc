// device=kmod through the C ABI, as an engine links it (libtempo.so only): what a host
// without tempo.ko gets, and the placement call's argument checks on any device. The guest
// (tests/vm) runs the whole lifecycle on /dev/tempo0 with tests/kmod/capi_vmtest.c.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "tempo/tempo.h"

namespace {

struct Config {
  tempo_config* c = nullptr;
  Config() { EXPECT_EQ(tempo_config_new(&c), 0); }
  ~Config() { tempo_config_free(c); }
};

// tempo_ctx_new's result and error message for device=kmod over `path`.
int open_kmod(const char* path, std::string* error) {
  Config cfg;
  EXPECT_EQ(tempo_config_set(cfg.c, "device", "kmod"), 0);
  EXPECT_EQ(tempo_config_set(cfg.c, "kmod.path", path), 0);
  tempo_ctx* ctx = nullptr;
  const int r = tempo_ctx_new(cfg.c, &ctx);
  EXPECT_EQ(ctx, nullptr);
  *error = tempo_config_error(cfg.c);
  return r;
}

TEST(KmodCapi, MissingNodeIsENOENTNamingIt) {
  std::string error;
  EXPECT_EQ(open_kmod("/nonexistent/tempo0", &error), -ENOENT);
  EXPECT_NE(error.find("/nonexistent/tempo0"), std::string::npos) << error;
}

TEST(KmodCapi, OtherCharacterDeviceIsENOTTY) {
  std::string error;
  EXPECT_EQ(open_kmod("/dev/null", &error), -ENOTTY);
  EXPECT_NE(error.find("not a tempo device"), std::string::npos) << error;
}

TEST(KmodCapi, PathKeyIsValidated) {
  Config cfg;
  EXPECT_EQ(tempo_config_set(cfg.c, "kmod.path", ""), -EINVAL);
  EXPECT_NE(std::string(tempo_config_error(cfg.c)).find("kmod.path"), std::string::npos);
  EXPECT_EQ(tempo_config_set(cfg.c, "kmod.bogus", "1"), -EINVAL);
}

TEST(KmodCapi, PlacementIsRefusedOffKmodAndChecksItsArguments) {
  Config cfg;
  ASSERT_EQ(tempo_config_set(cfg.c, "device", "sim"), 0);
  tempo_ctx* ctx = nullptr;
  ASSERT_EQ(tempo_ctx_new(cfg.c, &ctx), 0);
  const tempo_kmod_object good = {1, 0, 4096, 0};
  const tempo_kmod_object reserved = {1, 0, 4096, 1};
  EXPECT_EQ(tempo_kmod_add_objects(ctx, &good, 1), -EOPNOTSUPP);
  EXPECT_EQ(tempo_kmod_add_objects(ctx, &reserved, 1), -EINVAL);
  EXPECT_EQ(tempo_kmod_add_objects(ctx, nullptr, 1), -EINVAL);
  EXPECT_EQ(tempo_kmod_add_objects(nullptr, &good, 1), -EINVAL);
  size_t prefix = 9;
  const uint64_t key = 1;
  EXPECT_EQ(tempo_store_lookup(ctx, &key, 1, &prefix), 0);
  EXPECT_EQ(prefix, 0u);  // nothing placed on the sim's tier
  tempo_ctx_unref(ctx);
}

}  // namespace
