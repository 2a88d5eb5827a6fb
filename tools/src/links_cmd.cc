// The LINKS commands: shrink (files out of the zip, into LINKS) and fetch
// (linked files back into the zip).
#include <iostream>

#include "carton/carton/links.h"
#include "carton/manifest/sha256.h"
#include "commands.h"
#include "environment_args.h"
#include "exit_code.h"
#include "json_out.h"
#include "progress_flags.h"

namespace carton::cli {
namespace {

Result<ShrinkReport> ShrinkInto(const ShrinkArgs& a, const ShrinkOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(a.env, a.quiet));
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(a.carton, env, "shrink"));
  return carton::Shrink(*source, a.output, options);
}

Result<FetchLinkedReport> FetchInto(const FetchArgs& a, const FetchLinkedOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(a.env, a.quiet));
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(a.carton, env, "fetch"));
  return FetchLinked(*source, a.output, options);
}

}  // namespace

int Shrink(const ShrinkArgs& a) {
  ShrinkOptions o;
  o.url_prefix = a.url_prefix;
  o.blobs_dir = a.blobs_dir;
  o.min_size = a.min_size;
  for (const auto& name : a.encodings) {
    auto e = ParseBlobEncoding(name);
    if (!e.ok()) return Fail("shrink", e.status().WithContext("--encodings"));
    o.encodings.push_back(*e);
  }
  ProgressLine progress("shrinking " + a.carton, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  Result<ShrinkReport> r = ShrinkInto(a, o);
  progress.Finish();
  if (!r.ok()) return Fail("shrink", r.status());
  if (a.json) {
    Json j = JsonDocument();
    j["model"] = a.output;
    j["ok"] = true;
    j["input"] = a.carton;
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["moved"] = r->moved;
    j["moved_bytes"] = r->moved_bytes;
    j["blobs_written"] = r->blobs_written;
    PrintJson(j);
    return kExitOk;
  }
  if (!a.quiet)
    std::cerr << "moved " << r->moved.size() << " files, " << r->moved_bytes << " bytes, out of "
              << a.output << " (" << r->blobs_written << " new blobs in " << a.blobs_dir << ")\n";
  std::cout << manifest::ToHex(r->manifest_hash) << '\n';
  return kExitOk;
}

int Fetch(const FetchArgs& a) {
  FetchLinkedOptions o;
  auto method = ParseCompression(a.compression);
  if (!method.ok()) return Fail("fetch", method.status().WithContext("--compression"));
  o.compression = *method;
  ProgressLine progress("writing " + a.output, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  Result<FetchLinkedReport> r = FetchInto(a, o);
  progress.Finish();
  if (!r.ok()) return Fail("fetch", r.status());
  if (a.json) {
    Json j = JsonDocument();
    j["model"] = a.output;
    j["ok"] = true;
    j["input"] = a.carton;
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["fetched"] = r->fetched;
    j["fetched_bytes"] = r->fetched_bytes;
    PrintJson(j);
    return kExitOk;
  }
  if (!a.quiet)
    std::cerr << "fetched " << r->fetched.size() << " linked files, " << r->fetched_bytes
              << " bytes, into " << a.output << '\n';
  std::cout << manifest::ToHex(r->manifest_hash) << '\n';
  return kExitOk;
}

}  // namespace carton::cli
