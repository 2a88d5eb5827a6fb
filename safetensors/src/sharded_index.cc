// Parses model.safetensors.index.json in two passes: a SAX pass that rejects
// repeated keys and deep nesting (nlohmann's DOM keeps the last duplicate
// silently and recurses without limit), then a DOM parse of the checked
// text, which is small.
#include "sharded_index.h"

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "carton/common/quote.h"

namespace carton::safetensors::internal {
namespace {

// "an array", "a number": the JSON type of `v` for a message.
std::string TypeOf(const nlohmann::json& v) {
  std::string name = v.type_name();
  bool vowel = !name.empty() && std::string_view("aeiou").find(name[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name;
}

class IndexChecker : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit IndexChecker(std::size_t max_depth) : max_depth_(max_depth) {}

  Status result;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Push(true); }
  bool end_object() override { return Pop(); }
  bool start_array(std::size_t) override { return Push(false); }
  bool end_array() override { return Pop(); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      result = Corrupt("duplicate key " + QuoteForMessage(k) + " in " + Where());
      return false;
    }
    f.last_key = k;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix; the rest
    // names the line and column.
    std::string what = ex.what();
    if (auto end = what.find("] "); what.starts_with("[") && end != std::string::npos) {
      what.erase(0, end + 2);
    }
    result = Corrupt("invalid JSON at byte " + std::to_string(position) + ": " + what);
    return false;
  }

 private:
  struct Frame {
    bool object = false;
    std::unordered_set<std::string> keys;
    std::string last_key;
  };

  bool Push(bool object) {
    if (frames_.size() >= max_depth_) {
      result = Corrupt("JSON nested deeper than " + std::to_string(max_depth_) + " levels in " +
                       Where());
      return false;
    }
    frames_.push_back(Frame{object, {}, {}});
    return true;
  }
  bool Pop() {
    frames_.pop_back();
    return true;
  }

  // The innermost open container, as the keys leading to it.
  std::string Where() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      if (!path.empty()) path += '.';
      path += frames_[i].object ? frames_[i].last_key : "[]";
    }
    return path.empty() ? "the top-level object" : QuoteForMessage(path);
  }

  std::size_t max_depth_;
  std::vector<Frame> frames_;
};

Result<ShardIndex> Extract(const nlohmann::json& root) {
  if (!root.is_object()) {
    return Corrupt("index is " + TypeOf(root) + ", not an object");
  }
  ShardIndex out;
  if (auto it = root.find("metadata"); it != root.end()) {
    if (!it->is_object()) {
      return Corrupt("\"metadata\" is " + TypeOf(*it) + ", not an object");
    }
    out.metadata_json = it->dump();
    if (auto ts = it->find("total_size"); ts != it->end() && ts->is_number_unsigned()) {
      out.total_size = ts->get<std::uint64_t>();
    }
  }
  auto wm = root.find("weight_map");
  if (wm == root.end()) return Corrupt("missing \"weight_map\"");
  if (!wm->is_object()) {
    return Corrupt("\"weight_map\" is " + TypeOf(*wm) + ", not an object");
  }
  out.weight_map.reserve(wm->size());
  // nlohmann's object is a std::map, so this visits tensor names in
  // byte order.
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string()) {
      return Corrupt("weight_map: tensor " + QuoteForMessage(tensor) + " maps to " + TypeOf(shard) +
                     ", not a shard file name");
    }
    out.weight_map.emplace_back(tensor, shard.get<std::string>());
  }
  return out;
}

}  // namespace

Result<ShardIndex> ParseShardIndex(std::string_view json, std::size_t max_depth) {
  try {
    IndexChecker checker(max_depth);
    bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &checker,
                                        nlohmann::json::input_format_t::json, /*strict=*/true);
    if (!ok) {
      if (!checker.result.ok()) return checker.result;
      return Corrupt("invalid JSON");
    }
    return Extract(nlohmann::json::parse(json.begin(), json.end()));
  } catch (const nlohmann::json::exception& e) {
    // The SAX pass accepted the text, so the DOM parse should too.
    return Internal(std::string("index JSON: ") + e.what());
  }
}

}  // namespace carton::safetensors::internal
