// tempoctl config: the settings table libtempo reads (libtempo/config/settings.h): every key
// with its default and what it accepts, or one key's; --markdown prints the table that
// Documentation/configuration.md holds.
#include <cstdio>
#include <string>

#include "cli.h"
#include "config/config_file.h"
#include "config/settings.h"

namespace tempo::ctl {
namespace {

json key_json(const SettingKey& k) {
  return json{{"key", k.key},
              {"default", k.default_value.empty() ? json(nullptr) : json(k.default_value)},
              {"when_unset", k.when_unset},
              {"environment", environment_name(k.key)},
              {"doc", k.doc}};
}

}  // namespace

int cmd_config(const Args& args) {
  if (args.positional.size() > 1) return fail("config", "at most one key");
  if (args.has("markdown")) {
    std::fputs(settings_markdown().c_str(), stdout);
    return 0;
  }
  std::vector<const SettingKey*> rows;
  if (args.positional.empty()) {
    for (const SettingKey& k : setting_keys()) rows.push_back(&k);
  } else if (const SettingKey* k = find_setting_key(args.positional[0])) {
    rows.push_back(k);
  } else {
    return fail("config", "unknown key '" + args.positional[0] + "'");
  }
  if (args.has("json")) {
    json doc = json::array();
    for (const SettingKey* k : rows) doc.push_back(key_json(*k));
    print_json(args.positional.empty() ? doc : doc[0]);
    return 0;
  }
  for (const SettingKey* k : rows) {
    const std::string def = k->default_value.empty() ? "(" + std::string(k->when_unset) + ")"
                                                     : std::string(k->default_value);
    std::printf("%-24s %-16s %s\n", std::string(k->key).c_str(), def.c_str(),
                std::string(k->doc).c_str());
  }
  return 0;
}

}  // namespace tempo::ctl
