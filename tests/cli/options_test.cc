// The shared option parser (tools/common/options.h): every form of option, every bad input.
#include "options.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace tempo::cli {
namespace {

const Option kOptions[] = {
    {"store", 'S', "dir", "a store (repeatable)"},
    {"all", 'a', nullptr, "every claim"},
    {"json", 0, nullptr, "JSON"},
    {"jobs", 'j', "n", "threads\nsecond line", 7},
};

struct Parsed {
  int rc;
  Args args;
  std::string error;
};

Parsed run(std::vector<std::string> argv, bool positional = false) {
  const Tool tool{"tool", "tool [options]", nullptr, kOptions, positional};
  std::vector<char*> ptrs;
  for (std::string& a : argv) ptrs.push_back(a.data());
  Parsed p;
  p.rc = parse(tool, static_cast<int>(ptrs.size()), ptrs.data(), &p.args, &p.error);
  return p;
}

TEST(Options, FlagsAndValuesInBothLongForms) {
  const Parsed p = run({"--all", "--store", "/a", "--store=/b", "--json"});
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_TRUE(p.args.has("all"));
  EXPECT_TRUE(p.args.has("json"));
  EXPECT_FALSE(p.args.has("jobs"));
  EXPECT_EQ(p.args.get("all"), "");
  EXPECT_EQ(p.args.get("jobs", "4"), "4");
  EXPECT_EQ(p.args.get("store"), "/b");  // the last one given
  EXPECT_EQ(p.args.all("store"), (std::vector<std::string>{"/a", "/b"}));
  ASSERT_EQ(p.args.given.size(), 4u);
  EXPECT_STREQ(p.args.given[1].option->long_name, "store");
}

TEST(Options, ValuesMayLookLikeOptionsOrBeEmpty) {
  const Parsed p = run({"--store", "--all", "--jobs=", "-j", "-1"});
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.args.get("store"), "--all");
  EXPECT_FALSE(p.args.has("all"));
  EXPECT_EQ(p.args.all("jobs"), (std::vector<std::string>{"", "-1"}));
  EXPECT_EQ(run({"--store=a=b"}).args.get("store"), "a=b");
}

TEST(Options, ShortOptionsAttachedSeparateAndBundled) {
  const Parsed p = run({"-S", "/a", "-S/b", "-aj4", "-h"});
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.args.all("store"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(p.args.has("all"));
  EXPECT_EQ(p.args.get("jobs"), "4");
  EXPECT_EQ(p.args.given[3].option->id, 7);
  EXPECT_TRUE(p.args.has("help"));
}

TEST(Options, HelpAndVersionAreEveryTools) {
  const Parsed p = run({"--help", "--version"});
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_TRUE(p.args.has("help"));
  EXPECT_TRUE(p.args.has("version"));
}

TEST(Options, OperandsOnlyWhereAccepted) {
  Parsed p = run({"ls", "--all", "--", "--json", "-"}, true);
  ASSERT_EQ(p.rc, 0) << p.error;
  EXPECT_EQ(p.args.positional, (std::vector<std::string>{"ls", "--json", "-"}));
  EXPECT_FALSE(p.args.has("json"));
  p = run({"--all", "ls"});
  EXPECT_EQ(p.rc, -EINVAL);
  EXPECT_EQ(p.error, "unexpected argument 'ls'");
}

TEST(Options, BadInputIsNamed) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"--bogus=1"}, "unknown option '--bogus'"},
      {{"--stor", "/a"}, "unknown option '--stor'"},  // no abbreviations
      {{"-x"}, "unknown option '-x'"},
      {{"-ax"}, "unknown option '-x'"},
      {{"--store"}, "option '--store' needs a value <dir>"},
      {{"--all", "-S"}, "option '--store' needs a value <dir>"},
      {{"-aj"}, "option '--jobs' needs a value <n>"},
      {{"--all=yes"}, "option '--all' takes no value"},
      {{"--json="}, "option '--json' takes no value"},
  };
  for (const auto& [argv, want] : cases) {
    const Parsed p = run(argv);
    EXPECT_EQ(p.rc, -EINVAL) << argv[0];
    EXPECT_EQ(p.error, want) << argv[0];
  }
}

TEST(Options, WholeNumbers) {
  uint64_t v = 0;
  std::string error;
  EXPECT_EQ(to_u64("jobs", "18446744073709551615", 0, UINT64_MAX, &v, &error), 0);
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(to_u64("jobs", "007", 1, 8, &v, &error), 0);
  EXPECT_EQ(v, 7u);
  const std::pair<const char*, std::string> bad[] = {
      {"", "--jobs: '' is not a whole number"},
      {"x", "--jobs: 'x' is not a whole number"},
      {"4x", "--jobs: '4x' is not a whole number"},
      {"-1", "--jobs: '-1' is not a whole number"},
      {"+1", "--jobs: '+1' is not a whole number"},
      {" 1", "--jobs: ' 1' is not a whole number"},
      {"1.5", "--jobs: '1.5' is not a whole number"},
      {"0", "--jobs: '0' is out of range [1, 256]"},
      {"257", "--jobs: '257' is out of range [1, 256]"},
      {"18446744073709551616", "--jobs: '18446744073709551616' is out of range [1, 256]"},
  };
  for (const auto& [text, want] : bad) {
    v = 99;
    EXPECT_EQ(to_u64("jobs", text, 1, 256, &v, &error), -EINVAL) << text;
    EXPECT_EQ(error, want);
    EXPECT_EQ(v, 99u) << "a refused value leaves the output alone";
  }
  uint32_t w = 0;
  EXPECT_EQ(to_u32("n", "4294967295", 1, UINT32_MAX, &w, &error), 0);
  EXPECT_EQ(w, UINT32_MAX);
  EXPECT_EQ(to_u32("n", "4294967296", 1, UINT32_MAX, &w, &error), -EINVAL);
  EXPECT_EQ(error, "--n: '4294967296' is out of range [1, 4294967295]");
}

TEST(Options, RealNumbers) {
  double v = 0;
  std::string error;
  EXPECT_EQ(to_double("ratio", "12.5", 0, 100, &v, &error), 0);
  EXPECT_EQ(v, 12.5);
  EXPECT_EQ(to_double("ratio", "1e2", 0, 100, &v, &error), 0);
  EXPECT_EQ(v, 100);
  const std::pair<const char*, std::string> bad[] = {
      {"", "--ratio: '' is not a number"},
      {"abc", "--ratio: 'abc' is not a number"},
      {"5%", "--ratio: '5%' is not a number"},
      {"nan", "--ratio: 'nan' is not a number"},
      {"inf", "--ratio: 'inf' is not a number"},
      {"1e999", "--ratio: '1e999' is not a number"},
      {" 5", "--ratio: ' 5' is not a number"},
      {"-0.5", "--ratio: '-0.5' is out of range [0, 100]"},
      {"100.01", "--ratio: '100.01' is out of range [0, 100]"},
  };
  for (const auto& [text, want] : bad) {
    v = 7;
    EXPECT_EQ(to_double("ratio", text, 0, 100, &v, &error), -EINVAL) << text;
    EXPECT_EQ(error, want);
    EXPECT_EQ(v, 7);
  }
}

}  // namespace
}  // namespace tempo::cli
