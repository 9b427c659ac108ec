#include "config/config_file.h"

#include <cerrno>
#include <cstring>

#include "core/text_file.h"

namespace tempo {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Cuts a comment: '#' at the start or after whitespace, outside double quotes.
std::string_view strip_comment(std::string_view line) {
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') quoted = !quoted;
    if (line[i] == '#' && !quoted && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  }
  return line;
}

// Calls apply(key, value, where) for each setting line; stops at the first error.
template <typename Apply>
int parse(std::string_view text, std::string_view name, std::string* error, Apply&& apply) {
  std::string section;
  size_t lineno = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineno;
    const std::string where = std::string(name) + ":" + std::to_string(lineno) + ": ";
    line = trim(strip_comment(line));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        if (error) *error = where + "unterminated section header '" + std::string(line) + "'";
        return -EINVAL;
      }
      const std::string_view name_in = trim(line.substr(1, line.size() - 2));
      if (name_in.empty() || name_in == "tempo") {
        section.clear();
      } else if (is_setting_section(name_in)) {
        section = std::string(name_in) + ".";
      } else {
        if (error)
          *error =
              where + "unknown section '[" + std::string(name_in) + "]': accepted [tempo], [uring]";
        return -EINVAL;
      }
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      if (error) *error = where + "expected 'key = value', got '" + std::string(line) + "'";
      return -EINVAL;
    }
    const std::string key = section + std::string(trim(line.substr(0, eq)));
    std::string_view value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    std::string msg;
    if (const int r = apply(key, value, &msg); r != 0) {
      if (error) *error = where + msg;
      return r;
    }
  }
  return 0;
}

}  // namespace

int load_config_text(Settings& s, std::string_view text, std::string_view name,
                     std::string* error) {
  Settings next = s;
  const int r = parse(text, name, error,
                      [&](const std::string& key, std::string_view value, std::string* msg) {
                        return next.set(key, value, msg);
                      });
  if (r == 0) s = std::move(next);
  return r;
}

int load_config_file(Settings& s, std::string_view path, std::string* error) {
  std::string text;
  if (const int r = read_text_file(path, "configuration file", &text, error); r != 0) return r;
  return load_config_text(s, text, path, error);
}

int apply_calibration_file(Settings& s, std::string_view path, std::string* error) {
  std::string text;
  if (const int r = read_text_file(path, "calibration file", &text, error); r != 0) return r;
  Settings next = s;
  const int r = parse(
      text, path, error, [&](const std::string& key, std::string_view value, std::string* msg) {
        bool known = false;
        for (std::string_view k : kCalibrationKeys) known = known || key == k;
        if (!known) {
          *msg = "'" + key +
                 "' is not a calibration key: accepted calibration_rate, static_rate, "
                 "demand_rate, staging_rate";
          return -EINVAL;
        }
        // Checked even when an explicit value wins, so a bad file is never silently accepted.
        Settings probe = next;
        if (const int pr = probe.set_default(key, value, msg); pr != 0) return pr;
        if (!next.is_explicit(key)) next = std::move(probe);
        return 0;
      });
  if (r == 0) s = std::move(next);
  return r;
}

std::string environment_name(std::string_view key) {
  std::string name = "TEMPO_";
  for (char c : key) name += c == '.' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

int apply_environment(Settings& s, const std::function<const char*(const char*)>& lookup,
                      std::string* error) {
  Settings next = s;
  for (const SettingKey& k : setting_keys()) {
    const std::string name = environment_name(k.key);
    const char* value = lookup(name.c_str());
    if (value == nullptr) continue;
    std::string msg;
    if (const int r = next.set(k.key, value, &msg); r != 0) {
      if (error) *error = name + ": " + msg;
      return r;
    }
  }
  s = std::move(next);
  return 0;
}

}  // namespace tempo
