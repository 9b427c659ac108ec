#include "options.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tempo::cli {

bool Args::has(std::string_view name) const {
  for (const Given& g : given)
    if (name == g.option->long_name) return true;
  return false;
}

std::string Args::get(std::string_view name, const std::string& fallback) const {
  for (auto it = given.rbegin(); it != given.rend(); ++it)
    if (name == it->option->long_name) return it->value;
  return fallback;
}

std::vector<std::string> Args::all(std::string_view name) const {
  std::vector<std::string> values;
  for (const Given& g : given)
    if (name == g.option->long_name) values.push_back(g.value);
  return values;
}

namespace {

const Option kHelp{"help", 'h', nullptr, "show this help and exit"};
const Option kVersion{"version", 0, nullptr, "print the TempoKV library version and exit"};

// The tool's options, then --help and --version.
std::vector<const Option*> table(const Tool& tool) {
  std::vector<const Option*> all;
  for (const Option& o : tool.options) all.push_back(&o);
  all.push_back(&kHelp);
  all.push_back(&kVersion);
  return all;
}

const Option* find_long(const std::vector<const Option*>& all, std::string_view name) {
  for (const Option* o : all)
    if (name == o->long_name) return o;
  return nullptr;
}

const Option* find_short(const std::vector<const Option*>& all, char c) {
  for (const Option* o : all)
    if (o->short_name == c) return o;
  return nullptr;
}

std::string needs_value(const Option& o) {
  return "option '--" + std::string(o.long_name) + "' needs a value <" + o.value_name + ">";
}

}  // namespace

int parse(const Tool& tool, int argc, char* const* argv, Args* out, std::string* error) {
  const std::vector<const Option*> all = table(tool);
  bool operands_only = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (operands_only || a.size() < 2 || a[0] != '-') {
      if (!tool.positional) {
        *error = "unexpected argument '" + std::string(a) + "'";
        return -EINVAL;
      }
      out->positional.emplace_back(a);
      continue;
    }
    if (a == "--") {
      operands_only = true;
      continue;
    }
    if (a.starts_with("--")) {
      std::string_view name = a.substr(2);
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string_view::npos;
      if (inline_value) name = name.substr(0, eq);
      const Option* o = find_long(all, name);
      if (!o) {
        *error = "unknown option '--" + std::string(name) + "'";
        return -EINVAL;
      }
      if (!o->value_name) {
        if (inline_value) {
          *error = "option '--" + std::string(o->long_name) + "' takes no value";
          return -EINVAL;
        }
        out->given.push_back({o, ""});
      } else if (inline_value) {
        out->given.push_back({o, std::string(a.substr(2 + eq + 1))});
      } else if (i + 1 < argc) {
        out->given.push_back({o, argv[++i]});
      } else {
        *error = needs_value(*o);
        return -EINVAL;
      }
      continue;
    }
    // -x, -xVALUE, -x VALUE, or bundled flags -abc.
    for (size_t k = 1; k < a.size(); ++k) {
      const Option* o = find_short(all, a[k]);
      if (!o) {
        *error = "unknown option '-" + std::string(1, a[k]) + "'";
        return -EINVAL;
      }
      if (!o->value_name) {
        out->given.push_back({o, ""});
        continue;
      }
      if (k + 1 < a.size()) {
        out->given.push_back({o, std::string(a.substr(k + 1))});
      } else if (i + 1 < argc) {
        out->given.push_back({o, argv[++i]});
      } else {
        *error = needs_value(*o);
        return -EINVAL;
      }
      break;
    }
  }
  return 0;
}

std::optional<int> parse_or_exit(const Tool& tool, int argc, char* const* argv, Args* out) {
  std::string error;
  if (parse(tool, argc, argv, out, &error) != 0) {
    usage_error(tool.name, error + " (see '" + tool.name + " --help')");
    return 2;
  }
  if (out->has("help")) {
    print_help(tool, stdout);
    return 0;
  }
  if (out->has("version")) {
    const std::string_view name = tool.name;
    print_version(std::string(name.substr(0, name.find(' '))).c_str());
    return 0;
  }
  return std::nullopt;
}

void print_help(const Tool& tool, std::FILE* to) {
  std::fprintf(to, "usage: %s\n", tool.usage);
  if (tool.summary) std::fprintf(to, "\n%s\n", tool.summary);
  std::fprintf(to, "\noptions:\n");
  constexpr int kColumn = 28;  // help text starts here; a longer name puts it on the next line
  for (const Option* o : table(tool)) {
    std::string left = o->short_name ? std::string("-") + o->short_name + ", " : "    ";
    left += "--" + std::string(o->long_name);
    if (o->value_name) left += "=<" + std::string(o->value_name) + ">";
    std::string_view help = o->help;
    if (static_cast<int>(left.size()) > kColumn - 2)
      std::fprintf(to, "  %s\n%*s", left.c_str(), kColumn + 2, "");
    else
      std::fprintf(to, "  %-*s", kColumn, left.c_str());
    for (size_t nl; (nl = help.find('\n')) != std::string_view::npos; help.remove_prefix(nl + 1))
      std::fprintf(to, "%.*s\n%*s", static_cast<int>(nl), help.data(), kColumn + 2, "");
    std::fprintf(to, "%.*s\n", static_cast<int>(help.size()), help.data());
  }
}

void print_version(const char* program) {
  std::printf("%s (TempoKV) %s\n", program, TEMPO_LIBRARY_VERSION);
}

int usage_error(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  return 2;
}

bool parse_u64(std::string_view text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 10);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parse_double(std::string_view text, double* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

int to_u64(std::string_view name, std::string_view text, uint64_t min, uint64_t max, uint64_t* out,
           std::string* error) {
  const std::string head = "--" + std::string(name) + ": '" + std::string(text) + "' ";
  const std::string range =
      "is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  uint64_t v = 0;
  if (!parse_u64(text, &v)) {
    // Digits only, yet no value: more than 64 bits.
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == text.npos;
    *error = head + (digits ? range : "is not a whole number");
    return -EINVAL;
  }
  if (v < min || v > max) {
    *error = head + range;
    return -EINVAL;
  }
  *out = v;
  return 0;
}

int to_u32(std::string_view name, std::string_view text, uint32_t min, uint32_t max, uint32_t* out,
           std::string* error) {
  uint64_t v = 0;
  if (const int r = to_u64(name, text, min, max, &v, error); r != 0) return r;
  *out = static_cast<uint32_t>(v);
  return 0;
}

int to_double(std::string_view name, std::string_view text, double min, double max, double* out,
              std::string* error) {
  double v = 0;
  const std::string head = "--" + std::string(name) + ": '" + std::string(text) + "' ";
  if (!parse_double(text, &v)) {
    *error = head + "is not a number";
    return -EINVAL;
  }
  if (!(v >= min && v <= max)) {
    char range[64];
    std::snprintf(range, sizeof(range), "[%g, %g]", min, max);
    *error = head + "is out of range " + range;
    return -EINVAL;
  }
  *out = v;
  return 0;
}

}  // namespace tempo::cli
