// Registry credentials and authentication messages. The only file of the
// OCI client that sees nlohmann/json (json.cc parses it) and OpenSSL; their
// exceptions and types stop here.
#include "auth.h"

#include <openssl/evp.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "carton/common/ascii.h"
#include "carton/common/atomic_file.h"
#include "carton/oci/client.h"
#include "json.h"

namespace carton::oci {
namespace {

// Largest docker config.json (or $CARTON_REGISTRY_AUTH file) read.
constexpr std::size_t kMaxDockerConfigSize = 4 << 20;
// The deepest nesting read in docker config.json, token server answers and
// registry error bodies.
constexpr int kMaxAuthJsonDepth = 16;
constexpr std::size_t kMaxErrorsShown = 4;
constexpr std::size_t kMaxMessageLength = 300;

using Json = nlohmann::json;

bool IsTokenChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || std::string_view("!#$%&'*+-.^_`|~/=").find(c) != std::string_view::npos;
}

// Parses JSON with a depth limit (deeply nested input would recurse).
Result<Json> ParseJson(std::string_view text, std::string_view source) {
  const std::string where(source);
  return internal::ParseBoundedJson(text, kMaxAuthJsonDepth,
                                    {.invalid_code = StatusCode::kInvalidArgument,
                                     .invalid_prefix = where + ": not valid JSON: ",
                                     .too_deep_code = StatusCode::kInvalidArgument,
                                     .too_deep_message = where + ": JSON nested too deeply"});
}

// "HOST[:PORT]" of a docker config key: "host:5000", "https://host/v1/".
std::string RegistryOfKey(std::string_view key) {
  if (const auto scheme = key.find("://"); scheme != std::string_view::npos) {
    key = key.substr(scheme + 3);
  }
  key = key.substr(0, key.find('/'));
  return AsciiLower(key);
}

const char* NonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

Result<std::string> ReadConfigText(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDockerConfigSize) {
    return InvalidArgument(path + ": " + std::to_string(size) + " bytes, more than the limit of " +
                           std::to_string(kMaxDockerConfigSize));
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(path));
  return std::string(AsChars(bytes));
}

std::string Cut(std::string s) {
  if (s.size() > kMaxMessageLength) s = s.substr(0, kMaxMessageLength) + "...";
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s;
}

}  // namespace

std::vector<Challenge> ParseChallenges(const std::vector<std::string>& values) {
  std::vector<Challenge> out;
  for (const std::string& value : values) {
    std::string_view s = value;
    auto skip_space = [&] {
      while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == ',')) {
        s.remove_prefix(1);
      }
    };
    auto read_token = [&] {
      std::size_t n = 0;
      while (n < s.size() && IsTokenChar(s[n]) && s[n] != '=') ++n;
      std::string t(s.substr(0, n));
      s.remove_prefix(n);
      return t;
    };
    skip_space();
    while (!s.empty()) {
      std::string word = read_token();
      if (word.empty()) break;  // something unparseable: stop with this value
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      if (s.empty() || s.front() != '=' || out.empty()) {
        // A scheme name starts a new challenge (a token68 after it is
        // not used by registries and is skipped).
        if (!s.empty() && s.front() == '=' && out.empty()) break;
        out.push_back({AsciiLower(word), {}});
        skip_space();
        continue;
      }
      s.remove_prefix(1);  // '='
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      std::string param_value;
      if (!s.empty() && s.front() == '"') {
        s.remove_prefix(1);
        while (!s.empty() && s.front() != '"') {
          if (s.front() == '\\' && s.size() > 1) s.remove_prefix(1);
          param_value.push_back(s.front());
          s.remove_prefix(1);
        }
        if (!s.empty()) s.remove_prefix(1);
      } else {
        std::size_t n = 0;
        while (n < s.size() && s[n] != ',' && s[n] != ' ') ++n;
        param_value = std::string(s.substr(0, n));
        s.remove_prefix(n);
      }
      out.back().params[AsciiLower(word)] = param_value;
      skip_space();
    }
  }
  return out;
}

Result<Token> ParseTokenResponse(std::string_view body, std::string_view realm) {
  auto j = ParseJson(body, realm);
  if (!j.ok() || !j->is_object()) {
    return NetworkError(std::string(realm) + ": the token server's answer is not a JSON object");
  }
  Token t;
  for (const char* key : {"token", "access_token"}) {
    auto it = j->find(key);
    if (it != j->end() && it->is_string() && !it->get<std::string>().empty()) {
      t.value = it->get<std::string>();
      break;
    }
  }
  if (t.value.empty()) {
    return NetworkError(std::string(realm) + ": the token server's answer holds no token");
  }
  for (char c : t.value) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return NetworkError(std::string(realm) +
                          ": the token holds a character not allowed in "
                          "a header");
    }
  }
  auto it = j->find("expires_in");
  if (it != j->end() && it->is_number_integer() && it->get<std::int64_t>() > 0) {
    t.lifetime = std::chrono::seconds(it->get<std::int64_t>());
  }
  return t;
}

std::string RegistryError(std::string_view body) {
  auto j = ParseJson(body, "error");
  if (!j.ok() || !j->is_object()) return "";
  auto errors = j->find("errors");
  if (errors == j->end() || !errors->is_array()) return "";
  std::string out;
  std::size_t shown = 0;
  for (const Json& e : *errors) {
    if (!e.is_object() || shown == kMaxErrorsShown) continue;
    std::string code, message;
    if (auto c = e.find("code"); c != e.end() && c->is_string()) code = c->get<std::string>();
    if (auto m = e.find("message"); m != e.end() && m->is_string()) {
      message = m->get<std::string>();
    }
    if (code.empty() && message.empty()) continue;
    if (!out.empty()) out += "; ";
    out += Cut(code.empty() ? message : message.empty() ? code : code + ": " + message);
    ++shown;
  }
  return out;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return InvalidArgument("not base64: the length is not a multiple of 4");
  std::string out(3 * (text.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return InvalidArgument("not base64");
  std::size_t size = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the bytes the padding stands for.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return out;
}

Result<std::map<std::string, Credentials>> ParseDockerConfig(std::string_view json,
                                                             std::string_view source) {
  CARTON_ASSIGN_OR_RETURN(Json j, ParseJson(json, source));
  const std::string where(source);
  if (!j.is_object()) return InvalidArgument(where + ": not a JSON object");
  std::map<std::string, Credentials> out;
  auto auths = j.find("auths");
  if (auths == j.end()) return out;
  if (!auths->is_object()) return InvalidArgument(where + ": \"auths\" is not an object");
  for (const auto& [key, entry] : auths->items()) {
    const std::string at = where + ": auths.\"" + Cut(key) + "\"";
    if (!entry.is_object()) return InvalidArgument(at + " is not an object");
    Credentials c;
    if (auto a = entry.find("auth");
        a != entry.end() && a->is_string() && !a->get<std::string>().empty()) {
      auto decoded = Base64Decode(a->get<std::string>());
      if (!decoded.ok()) return InvalidArgument(at + ".auth: " + decoded.status().message());
      const auto colon = decoded->find(':');
      if (colon == std::string::npos) {
        return InvalidArgument(at + ".auth: not base64 of \"user:password\"");
      }
      c.username = decoded->substr(0, colon);
      c.password = decoded->substr(colon + 1);
    } else {
      auto u = entry.find("username");
      auto p = entry.find("password");
      if (u == entry.end() || p == entry.end() || !u->is_string() || !p->is_string()) continue;
      c.username = u->get<std::string>();
      c.password = p->get<std::string>();
    }
    out[RegistryOfKey(key)] = std::move(c);
  }
  return out;
}

Result<std::optional<Credentials>> FindCredentials(std::string_view registry,
                                                   const std::string& config_path) {
  std::string text, source;
  if (!config_path.empty()) {
    CARTON_ASSIGN_OR_RETURN(text, ReadConfigText(config_path));
    source = config_path;
  } else if (const char* v = NonEmptyEnv("CARTON_REGISTRY_AUTH")) {
    if (v[0] == '{') {
      text = v;
      source = "CARTON_REGISTRY_AUTH";
    } else {
      auto read = ReadConfigText(v);
      if (!read.ok()) return read.status().WithContext("CARTON_REGISTRY_AUTH");
      text = std::move(read).value();
      source = v;
    }
  } else {
    std::string path;
    if (const char* dir = NonEmptyEnv("DOCKER_CONFIG")) {
      path = std::string(dir) + "/config.json";
    } else if (const char* home = NonEmptyEnv("HOME")) {
      path = std::string(home) + "/.docker/config.json";
    }
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) return std::optional<Credentials>();
    CARTON_ASSIGN_OR_RETURN(text, ReadConfigText(path));
    source = path;
  }
  CARTON_ASSIGN_OR_RETURN(auto all, ParseDockerConfig(text, source));
  auto it = all.find(AsciiLower(registry));
  if (it == all.end()) return std::optional<Credentials>();
  return std::optional<Credentials>(it->second);
}

}  // namespace carton::oci
