// libFuzzer target: the control socket's protocol (control/control_server.h) on a sim
// instance holding one claim. The input is cut into lines as the server cuts a client's
// bytes; every line gets one reply line that is a JSON object with a boolean "ok".
// tempod's binary client protocol has its own target, fuzz_tempod.cc.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "control/control_server.h"
#include "stack/context.h"

namespace {

tempo::Context& instance() {
  static std::unique_ptr<tempo::Context> in = [] {
    tempo::Settings s;
    std::string err;
    std::unique_ptr<tempo::Context> c;
    if (tempo::Context::create(s, &c, &err) != 0) __builtin_trap();
    const tempo::KvObject o{1, 4096};
    tempo::ClaimId id = 0;
    const tempo::Manifest m{o};
    if (c->sim_add_objects({&o, 1}) != 0 ||
        c->call([&](tempo::Stack& st) { return st.report(m, tempo::kNsPerSec, &id); }) != 0)
      __builtin_trap();
    return c;
  }();
  return *in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string line(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.size() > tempo::kControlMaxLine) return 0;  // the server disconnects
    const std::string reply = tempo::control_reply(instance(), line);
    if (reply.find('\n') != std::string::npos) __builtin_trap();
    const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("ok") || !j["ok"].is_boolean())
      __builtin_trap();
  }
  return 0;
}
