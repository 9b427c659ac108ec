// Documentation/configuration.md's table of keys is the settings table, row for row.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/settings.h"

namespace tempo {
namespace {

constexpr std::string_view kBegin = "<!-- settings table: `tempoctl config --markdown` -->\n";
constexpr std::string_view kEnd = "<!-- end of settings table -->\n";

TEST(SettingsDoc, ConfigurationMdHasTheSettingsTable) {
  std::ifstream in(TEMPO_CONFIGURATION_DOC);
  ASSERT_TRUE(in) << TEMPO_CONFIGURATION_DOC;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "no '" << kBegin << "' marker";
  ASSERT_NE(end, std::string::npos) << "no '" << kEnd << "' marker";
  ASSERT_LT(begin, end);
  const std::string table = doc.substr(begin + kBegin.size(), end - begin - kBegin.size());
  EXPECT_EQ(table, settings_markdown())
      << "Documentation/configuration.md is out of date: replace its table with the output of "
         "`tempoctl config --markdown`";
}

}  // namespace
}  // namespace tempo
