#include "json_out.h"

#include <iostream>

namespace carton::cli {

Json JsonDocument() {
  Json j;
  j["schema"] = kJsonSchema;
  return j;
}

std::string JsonErrorCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kCorrupt:
      return "corrupt";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kNetworkError:
      return "network";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kModelError:
      return "model_error";
  }
  return "internal";
}

Json ErrorJson(const Status& status) {
  Json j = {{"code", JsonErrorCode(status.code())}, {"message", status.message()}};
  if (const ModelException* raised = status.model_exception(); raised != nullptr) {
    j["exception"] = {{"type", raised->type}, {"message", raised->message}};
  }
  return j;
}

void PrintJson(const Json& j) {
  std::cout << j.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
}

void PrintJsonResults(Json results) {
  if (results.size() == 1) {
    Json one = JsonDocument();
    for (auto& [k, v] : results[0].items()) one[k] = std::move(v);
    PrintJson(one);
    return;
  }
  bool ok = true;
  for (const auto& r : results) ok = ok && r.value("ok", false);
  Json j = JsonDocument();
  j["ok"] = ok;
  j["results"] = std::move(results);
  PrintJson(j);
}

}  // namespace carton::cli
