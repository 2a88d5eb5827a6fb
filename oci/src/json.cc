// Untrusted JSON with a nesting limit. The only place in oci/ that calls
// nlohmann/json's parser; its exceptions stop here.
#include "json.h"

namespace carton::oci::internal {

Result<nlohmann::json> ParseBoundedJson(std::string_view text, int max_depth,
                                        const JsonErrorWording& wording) {
  using Json = nlohmann::json;
  bool too_deep = false;
  Json::parser_callback_t limit = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth > max_depth) {
      too_deep = true;
    }
    return !too_deep;
  };
  try {
    Json j = Json::parse(text.begin(), text.end(), limit);
    if (too_deep) return Status(wording.too_deep_code, wording.too_deep_message);
    return j;
  } catch (const Json::exception& e) {
    return Status(wording.invalid_code, wording.invalid_prefix + e.what());
  }
}

}  // namespace carton::oci::internal
