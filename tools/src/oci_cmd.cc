// carton push | pull: thin shells over carton/oci/artifact.h.
#include <algorithm>
#include <iostream>
#include <optional>

#include "carton/carton/signature.h"
#include "carton/common/progress.h"
#include "carton/oci/artifact.h"
#include "carton/oci/signature.h"
#include "commands.h"
#include "environment_args.h"
#include "exit_code.h"
#include "json_out.h"

namespace carton::cli {
namespace {

Json BlobsJson(const std::vector<oci::OciBlobReport>& blobs) {
  Json a = Json::array();
  for (const auto& b : blobs) {
    a.push_back({{"path", b.path},
                 {"digest", manifest::DigestString(b.digest)},
                 {"size", b.size},
                 {"action", b.action}});
  }
  return a;
}

// "3 uploaded (1048576 bytes), 1 present" from the blobs' actions.
std::string Summary(const std::vector<oci::OciBlobReport>& blobs, std::uint64_t bytes,
                    const char* moving_action) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& b : blobs) {
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == b.action; });
    if (it == counts.end()) {
      counts.push_back({b.action, 1});
    } else {
      ++it->second;
    }
  }
  std::string out = std::to_string(blobs.size()) + " blobs:";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out += (i == 0 ? " " : ", ") + std::to_string(counts[i].second) + " " + counts[i].first;
    if (counts[i].first == moving_action) out += " (" + HumanBytes(bytes) + ")";
  }
  return out;
}

}  // namespace

namespace {

// The carton pushed, and the signature it keeps pushed as its referrer:
// one that is not the carton's stops the push before anything is sent.
struct Pushed {
  oci::OciPushReport report;
  std::optional<oci::OciSignaturePush> signature;
};

Result<Pushed> PushFrom(const PushArgs& args, const oci::OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(args.env, args.quiet));
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(args.carton, env, "push"));
  CARTON_ASSIGN_OR_RETURN(std::optional<std::string> signature, SignatureToShip(*source));
  Pushed out;
  CARTON_ASSIGN_OR_RETURN(out.report, oci::PushCarton(*source, args.reference, options));
  if (signature) {
    auto pushed = oci::PushCartonSignature(args.reference, out.report.manifest_digest,
                                           AsBytes(*signature), env, options);
    if (!pushed.ok()) return pushed.status().WithContext("the signature");
    out.signature = *pushed;
  }
  return out;
}

Result<oci::OciPullReport> PullTo(const PullArgs& args, const oci::OciOptions& options) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(args.env, args.quiet));
  return oci::PullCarton(args.reference, args.output, env, options);
}

}  // namespace

int Push(const PushArgs& args) {
  oci::OciOptions options;
  if (args.format == "modelpack") options.format = oci::OciFormat::kModelPack;
  auto pushed = PushFrom(args, options);
  if (!pushed.ok()) return Fail("push", pushed.status());
  const oci::OciPushReport* r = &pushed->report;
  const std::optional<oci::OciSignaturePush>& signed_by = pushed->signature;
  const std::string digest = manifest::DigestString(r->manifest_digest);
  if (args.json) {
    Json j = JsonDocument();
    j["model"] = args.carton;
    j["ok"] = true;
    j["reference"] = r->reference;
    j["digest"] = digest;
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["reproducible"] = r->reproducible;
    j["bytes_uploaded"] = r->bytes_uploaded;
    j["blobs"] = BlobsJson(r->blobs);
    j["signature"] =
        signed_by ? Json(manifest::DigestString(signed_by->referrer_digest)) : Json(nullptr);
    PrintJson(j);
    return kExitOk;
  }
  if (!args.quiet) {
    std::cerr << "pushed " << args.carton << " to " << r->reference << ": "
              << Summary(r->blobs, r->bytes_uploaded, "uploaded") << '\n';
    if (signed_by) {
      std::cerr << "carton push: its signature as the referrer "
                << manifest::DigestString(signed_by->referrer_digest)
                << (signed_by->referrers_api
                        ? ""
                        : " (indexed by the tag " + oci::ReferrersTag(r->manifest_digest) + ")")
                << '\n';
    }
  }
  std::cout << digest << '\n';
  return kExitOk;
}

int Pull(const PullArgs& args) {
  oci::OciOptions options;
  options.cache_large_blobs = args.cache;
  // Its signature, when the registry has one, beside it.
  options.fetch_signature = true;
  auto r = PullTo(args, options);
  if (!r.ok()) return Fail("pull", r.status());
  if (args.json) {
    Json j = JsonDocument();
    j["model"] = args.output;
    j["ok"] = true;
    j["reference"] = r->reference;
    j["digest"] = manifest::DigestString(r->manifest_digest);
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["output"] = args.output;
    j["byte_identical"] = r->byte_identical;
    j["imported"] = r->imported;
    if (!r->byte_identical) j["not_identical_reason"] = r->not_identical_reason;
    j["bytes_downloaded"] = r->bytes_downloaded;
    j["blobs"] = BlobsJson(r->blobs);
    j["signature"] = r->signature_path.empty() ? Json(nullptr) : Json(r->signature_path);
    PrintJson(j);
    return kExitOk;
  }
  if (!args.quiet) {
    if (!r->signature_path.empty()) {
      std::cerr << "carton pull: its signature into " << r->signature_path
                << " (check it with `carton verify --key` or `--ca`)\n";
    }
    std::cerr << "pulled " << r->reference << " into " << args.output << ": "
              << Summary(r->blobs, r->bytes_downloaded, "downloaded") << '\n';
    if (r->imported) {
      std::cerr << "carton pull: imported a ModelPack carton did not write: its files are under "
                   "model/, carton.toml made from its config\n";
    } else if (r->byte_identical) {
      std::cerr << "carton pull: byte for byte the carton that was pushed\n";
    } else {
      std::cerr << "carton pull: not checked to be byte for byte the pushed carton: "
                << r->not_identical_reason << "; every file was checked against MANIFEST\n";
    }
  }
  std::cout << manifest::ToHex(r->manifest_hash) << '\n';
  return kExitOk;
}

}  // namespace carton::cli
