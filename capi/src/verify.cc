// carton_verify and carton_hash: carton/verify.h and the manifest hash for
// every kind of location (carton/source.h), as `carton verify` and `carton
// hash` run them.
#include "carton/carton/verify.h"

#include <string>

#include "carton/loader/environment.h"
#include "errors.h"
#include "handles.h"
#include "hash_out.h"

namespace carton::capi {
namespace {

Result<const VerifyProblem*> ProblemAt(const char* function, const carton_verify_report* report,
                                       std::size_t index) {
  CARTON_RETURN_IF_ERROR(Require(report, function, "report"));
  const auto& problems = report->report.problems;
  if (index >= problems.size()) return OutOfRange(function, "problem", index, problems.size());
  return &problems[index];
}

}  // namespace
}  // namespace carton::capi

extern "C" {

carton_status carton_verify(const char* location, carton_verify_report** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = nullptr;
    CARTON_RETURN_IF_ERROR(capi::Require(location, fn, "location"));
    CARTON_ASSIGN_OR_RETURN(Location where, Location::Parse(location));
    CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
    CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(where, env, {.operation = "verify"}));
    CARTON_ASSIGN_OR_RETURN(VerifyReport report, Verify(*source));
    *out = capi::NewHandle<carton_verify_report>(std::move(report));
    return Status::Ok();
  });
}

void carton_verify_report_free(carton_verify_report* report) { carton::capi::FreeHandle(report); }

carton_status carton_verify_report_ok(const carton_verify_report* report, int* ok) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(ok, fn, "ok"));
    *ok = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(report, fn, "report"));
    *ok = report->report.ok() ? 1 : 0;
    return Status::Ok();
  });
}

carton_status carton_verify_report_problem_count(const carton_verify_report* report,
                                                 size_t* count) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(count, fn, "count"));
    *count = 0;
    CARTON_RETURN_IF_ERROR(capi::Require(report, fn, "report"));
    *count = report->report.problems.size();
    return Status::Ok();
  });
}

carton_status carton_verify_report_problem(const carton_verify_report* report, size_t index,
                                           const char** where, const char** message) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    if (where != nullptr) *where = nullptr;
    if (message != nullptr) *message = nullptr;
    CARTON_ASSIGN_OR_RETURN(const VerifyProblem* p, capi::ProblemAt(fn, report, index));
    if (where != nullptr) *where = p->where.c_str();
    if (message != nullptr) *message = p->message.c_str();
    return Status::Ok();
  });
}

carton_status carton_hash(const char* location, char manifest_hash[CARTON_HASH_HEX_SIZE]) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(manifest_hash, fn, "manifest_hash"));
    manifest_hash[0] = '\0';
    CARTON_RETURN_IF_ERROR(capi::Require(location, fn, "location"));
    CARTON_ASSIGN_OR_RETURN(Location where, Location::Parse(location));
    CARTON_ASSIGN_OR_RETURN(const Environment env, loader::DefaultEnvironment());
    CARTON_ASSIGN_OR_RETURN(auto source, OpenSource(where, env, {.operation = "hash"}));
    CARTON_ASSIGN_OR_RETURN(manifest::Digest digest, source->ManifestHash());
    capi::WriteHash(digest, manifest_hash);
    return Status::Ok();
  });
}

}  // extern "C"
