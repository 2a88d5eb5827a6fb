// The slow path for a header the fast parser rejected: nlohmann's SAX parser
// re-reads it to report the byte offset, and the tensor and field at fault
// where the JSON is well-formed but holds an unrepresentable number.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "header_parser.h"

namespace carton::safetensors::internal {
namespace {

class Diagnoser : public nlohmann::json_sax<nlohmann::json> {
 public:
  Status result;

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t& text) override {
    // The fast parser fails on integers beyond 64 bits; nlohmann reads them
    // as floats. Say which tensor and field holds one.
    // path_ is {tensor name, field, field} inside a tensor's array field.
    if (path_.size() == 3 && (path_[1] == "shape" || path_[1] == "data_offsets")) {
      bool shape = path_[1] == "shape";
      result = Fail(shape ? ErrorKind::kInvalidShape : ErrorKind::kInvalidOffsets,
                    "tensor \"" + path_[0] + "\": " + path_[1] + " value " + text +
                        " is not an integer in range");
      return false;
    }
    return Value();
  }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    path_.emplace_back();
    return true;
  }
  bool end_object() override {
    path_.pop_back();
    return Value();
  }
  bool start_array(std::size_t) override {
    path_.emplace_back(path_.empty() ? std::string() : path_.back());
    return true;
  }
  bool end_array() override {
    path_.pop_back();
    return Value();
  }
  bool key(string_t& k) override {
    if (!path_.empty()) path_.back() = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    // nlohmann's text: "[json.exception.parse_error.101] parse error at
    // line 1, column 5: syntax error while parsing ... - unexpected ...".
    std::string what = ex.what();
    if (auto p = what.find("] "); what.rfind("[json.exception", 0) == 0 && p != std::string::npos) {
      what.erase(0, p + 2);
    }
    bool trailing = what.find("; expected end of input") != std::string::npos;
    result = Fail(trailing ? ErrorKind::kTrailingBytes : ErrorKind::kInvalidJson,
                  "header JSON invalid at byte " + std::to_string(position) + ": " + what);
    return false;
  }

 private:
  // The path to the current value: keys of enclosing objects. Arrays repeat
  // their parent's key so that a shape element reports "shape".
  bool Value() { return true; }
  std::vector<std::string> path_;
};

}  // namespace

Status DiagnoseJson(std::string_view json, std::string_view fast_parser_message) {
  Diagnoser d;
  nlohmann::json::sax_parse(json.begin(), json.end(), &d, nlohmann::json::input_format_t::json,
                            /*strict=*/true);
  if (!d.result.ok()) return d.result;
  return Fail(ErrorKind::kInvalidJson, "header JSON invalid: " + std::string(fast_parser_message));
}

}  // namespace carton::safetensors::internal
