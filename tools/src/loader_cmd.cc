// carton load | cache ... | self-test | infer | runners: thin shells over
// the loader and the runner client.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "carton/common/atomic_file.h"
#include "carton/common/progress.h"
#include "carton/common/quote.h"
#include "carton/format/tensor.h"
#include "carton/loader/cache.h"
#include "carton/loader/loader.h"
#include "carton/runner/client.h"
#include "carton/runner/input_check.h"
#include "carton/runner/select.h"
#include "carton/runner/self_test.h"
#include "carton/runner/tensor_file.h"
#include "commands.h"
#include "exit_code.h"
#include "json_out.h"
#include "progress_flags.h"

namespace carton::cli {
namespace {

// The entries `hashes` name: each a manifest hash, or a prefix of one
// cached entry's (at least 4 hex digits, as git and docker take them).
Result<std::vector<manifest::Digest>> ParseHashes(const loader::CartonCache& cache,
                                                  const std::vector<std::string>& hashes) {
  std::vector<manifest::Digest> out;
  std::optional<std::vector<loader::CacheEntryInfo>> entries;
  for (const auto& h : hashes) {
    if (auto d = manifest::ParseHex(h)) {
      out.push_back(*d);
      continue;
    }
    const bool hex = h.size() >= 4 && h.size() < 64 &&
                     h.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex) {
      return InvalidArgument(QuoteForMessage(h) +
                             " is not a manifest hash (64 lowercase hex digits) or a prefix of "
                             "one (at least 4)");
    }
    if (!entries) {
      CARTON_ASSIGN_OR_RETURN(entries, cache.List());
    }
    std::vector<std::string> found;
    for (const auto& e : *entries) {
      if (e.hash.starts_with(h)) found.push_back(e.hash);
    }
    if (found.empty()) return NotFound(h + ": no cached carton's manifest hash starts so");
    if (found.size() > 1) {
      return InvalidArgument(h + ": ambiguous, " + std::to_string(found.size()) +
                             " cached cartons' hashes start so (" + found[0] + ", " + found[1] +
                             (found.size() > 2 ? ", ..." : "") + ")");
    }
    out.push_back(*manifest::ParseHex(found[0]));
  }
  return out;
}

// Loads MODEL and starts the runner it needs.
struct Session {
  loader::LoadedCarton carton;
  runner::RunnerProcess process;
};

Result<Session> Start(const RunArgs& args, loader::LoadedCarton carton,
                      const loader::Device& device) {
  CARTON_ASSIGN_OR_RETURN(runner::RunnerCandidate r, runner::SelectRunner(carton.config().runner));
  runner::RunnerProcessOptions opts;
  opts.device = device;
  opts.infer_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(args.timeout * 1000));
  opts.lenient = args.lenient;
  for (const auto& o : args.opts) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgument("--opt wants KEY=VALUE");
    opts.opts[o.substr(0, eq)] = o.substr(eq + 1);
  }
  CARTON_ASSIGN_OR_RETURN(runner::RunnerProcess p,
                          runner::RunnerProcess::Start(r.path, carton.root_dir(), opts));
  return Session{std::move(carton), std::move(p)};
}

// Loads `model` through the cache with `options`, drawing a progress line
// unless `quiet` (which also silences the library's download line).
Result<loader::LoadedCarton> LoadWithProgress(const std::string& model, loader::LoadOptions options,
                                              bool quiet) {
  ProgressLine progress("loading " + model, !quiet);
  if (quiet) {
    options.progress = Silent();
  } else if (progress.enabled()) {
    options.progress = progress.Callback();
  }
  auto carton = loader::Load(model, options);
  progress.Finish();
  return carton;
}

Result<loader::LoadedCarton> LoadModel(const RunArgs& args) {
  loader::LoadOptions options;
  options.registry_config = args.registry.config;
  options.plain_http = args.registry.plain_http;
  return LoadWithProgress(args.model, options, args.quiet);
}

// "x float32, y int64": the declared inputs, for messages about a wrong one.
std::string DeclaredInputs(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (const auto& spec : specs) {
    if (!s.empty()) s += ", ";
    s += spec.name + " " + std::string(DataTypeName(spec.dtype));
  }
  return s;
}

}  // namespace

int Load(const LoadArgs& args) {
  // --device is checked before the load (a GPU that is not there costs
  // nothing) and reported; a load starts no runner.
  std::optional<loader::Device> device;
  if (!args.device.empty()) {
    auto resolved = ResolveCommandDevice(args.device);
    if (!resolved.ok()) return Fail("load", resolved.status());
    device = std::move(resolved).value();
  }
  loader::LoadOptions options;
  options.verify_cache_hit = args.verify;
  options.registry_config = args.registry.config;
  options.plain_http = args.registry.plain_http;
  options.threads = args.threads;
  auto c = LoadWithProgress(args.model, options, args.quiet);
  if (!c.ok()) return Fail("load", c.status());
  if (args.json) {
    const auto& st = c->stats();
    Json j = JsonDocument();
    j["model"] = args.model;
    j["ok"] = true;
    j["model_dir"] = c->model_dir();
    j["root_dir"] = c->root_dir();
    j["manifest_hash"] = c->manifest_hash() ? manifest::ToHex(*c->manifest_hash()) : "";
    j["cache_hit"] = st.cache_hit;
    j["mapped_from_carton"] = st.mapped_from_carton;
    j["bytes_hashed"] = st.bytes_hashed;
    j["bytes_copied"] = st.bytes_copied;
    j["bytes_decoded"] = st.bytes_decoded;
    j["bytes_fetched"] = st.bytes_fetched;
    if (device) j["device"] = device->Name();
    PrintJson(j);
    return kExitOk;
  }
  std::cout << (args.root ? c->root_dir() : c->model_dir()) << "\n";
  return kExitOk;
}

namespace {

Json PartialsJson(const std::vector<loader::PartialDownload>& partials) {
  Json out = Json::array();
  for (const auto& p : partials) {
    // A blob is named by its sha256, a carton by its manifest hash
    // (under "sha256" too, the name schema 1 had first).
    Json partial = {{"kind", p.kind}, {"sha256", p.sha256}};
    if (p.kind == "carton") partial["manifest_hash"] = p.sha256;
    partial["path"] = p.path;
    partial["size"] = p.size;
    partial["in_use"] = p.in_use;
    out.push_back(std::move(partial));
  }
  return out;
}

}  // namespace

int CacheList(const CacheArgs& args) {
  auto cache = loader::CartonCache::OpenDefault();
  if (!cache.ok()) return Fail("cache list", cache.status());
  auto entries = cache->List();
  if (!entries.ok()) return Fail("cache list", entries.status());
  auto blobs = cache->Blobs();
  if (!blobs.ok()) return Fail("cache list", blobs.status());
  auto partials = cache->Partials();
  if (!partials.ok()) return Fail("cache list", partials.status());
  auto temporaries = cache->Temporaries();
  if (!temporaries.ok()) return Fail("cache list", temporaries.status());
  if (args.json) {
    Json a = Json::array();
    for (const auto& e : *entries) {
      // "hash": the name schema 1 had first, kept beside manifest_hash.
      a.push_back({{"manifest_hash", e.hash},
                   {"hash", e.hash},
                   {"dir", e.dir},
                   {"size", e.size},
                   {"last_used", e.last_used},
                   {"model_name", e.model_name}});
    }
    Json j = JsonDocument();
    j["ok"] = true;
    j["entries"] = std::move(a);
    j["blobs"] = {
        {"count", blobs->count}, {"bytes", blobs->bytes}, {"shared_bytes", blobs->shared_bytes}};
    j["partial_downloads"] = PartialsJson(*partials);
    j["temporaries"] = Json::array();
    for (const auto& t : *temporaries) {
      j["temporaries"].push_back({{"path", t.path}, {"size", t.size}, {"in_use", t.in_use}});
    }
    PrintJson(j);
    return kExitOk;
  }
  for (const auto& e : *entries) {
    std::cout << e.hash << "  " << HumanBytes(e.size) << "  "
              << (e.model_name.empty() ? "-" : e.model_name) << "\n";
  }
  std::cout << "blobs  " << blobs->count << " files  " << HumanBytes(blobs->bytes) << "  ("
            << HumanBytes(blobs->shared_bytes) << " shared with cached cartons)\n";
  for (const auto& p : *partials) {
    std::cout << "partial  " << p.kind << "  " << p.sha256 << "  " << HumanBytes(p.size)
              << (p.in_use ? "  (downloading now)" : "  (resumed by the next fetch)") << "\n";
  }
  for (const auto& t : *temporaries) {
    std::cout << "temporary  " << t.path << "  " << HumanBytes(t.size)
              << (t.in_use ? "  (being written now)" : "  (left by a process that is gone)")
              << "\n";
  }
  return kExitOk;
}

int CacheVerify(const CacheArgs& args) {
  auto cache = loader::CartonCache::OpenDefault();
  if (!cache.ok()) return Fail("cache verify", cache.status());
  auto hashes = ParseHashes(*cache, args.hashes);
  if (!hashes.ok()) return Fail("cache verify", hashes.status());
  if (hashes->empty()) {
    auto entries = cache->List();
    if (!entries.ok()) return Fail("cache verify", entries.status());
    for (const auto& e : *entries) hashes->push_back(*manifest::ParseHex(e.hash));
  }
  bool all_ok = true;
  Json report = Json::array();
  for (const auto& h : *hashes) {
    ProgressLine progress("verifying " + manifest::ToHex(h).substr(0, 12), !args.quiet);
    auto r = cache->Verify(h, progress.enabled() ? progress.Callback() : ProgressFn());
    progress.Finish();
    if (!r.ok()) return Fail("cache verify", r.status());
    all_ok = all_ok && r->ok();
    if (args.json) {
      Json problems = Json::array();
      for (const auto& p : r->problems) problems.push_back({{"where", ""}, {"message", p}});
      report.push_back({{"manifest_hash", r->hash},
                        {"hash", r->hash},  // schema 1's first name, kept
                        {"ok", r->ok()},
                        {"problems", std::move(problems)}});
    } else if (r->ok()) {
      std::cout << r->hash << ": ok\n";
    } else {
      std::cout << r->hash << ": " << r->problems.size() << " problem(s)\n";
      for (const auto& p : r->problems) {
        std::cerr << "carton cache verify: " << r->hash << ": " << p << "\n";
      }
    }
  }
  if (args.json) {
    Json j = JsonDocument();
    j["ok"] = all_ok;
    j["entries"] = std::move(report);
    PrintJson(j);
  }
  return all_ok ? kExitOk : kExitBadInput;
}

int CacheRemove(const CacheArgs& args) {
  auto cache = loader::CartonCache::OpenDefault();
  if (!cache.ok()) return Fail("cache rm", cache.status());
  auto hashes = ParseHashes(*cache, args.hashes);
  if (!hashes.ok()) return Fail("cache rm", hashes.status());
  Json removed = Json::array();
  for (const auto& h : *hashes) {
    Status s = cache->Remove(h);
    if (!s.ok()) return Fail("cache rm", s);
    removed.push_back(manifest::ToHex(h));
    if (!args.json && !args.quiet) std::cerr << "removed " << manifest::ToHex(h) << "\n";
  }
  if (args.json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["removed"] = std::move(removed);
    PrintJson(j);
  }
  return kExitOk;
}

int CacheGc(const CacheArgs& args) {
  auto cache = loader::CartonCache::OpenDefault();
  if (!cache.ok()) return Fail("cache gc", cache.status());
  Result<loader::GcReport> r = Status::Ok();
  if (args.max_size.empty()) {
    r = cache->Clean();  // only what nothing uses
  } else {
    auto max = loader::ParseSize(args.max_size);
    if (!max.ok()) return Fail("cache gc", max.status());
    r = cache->Gc(*max);
  }
  if (!r.ok()) return Fail("cache gc", r.status());
  if (args.json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["removed"] = r->removed;
    j["removed_blobs"] = r->removed_blobs;
    j["removed_partials"] = r->removed_partials;
    j["kept_in_use"] = r->skipped_in_use;
    j["kept_blobs_in_use"] = r->skipped_blobs_in_use;
    j["freed_bytes"] = r->freed;
    j["remaining_bytes"] = r->remaining;
    PrintJson(j);
    return kExitOk;
  }
  for (const auto& h : r->removed) std::cout << "removed " << h << "\n";
  for (const auto& h : r->removed_blobs) std::cout << "removed blob " << h << "\n";
  for (const auto& h : r->removed_partials) std::cout << "removed partial download " << h << "\n";
  for (const auto& h : r->skipped_in_use) std::cout << "in use, kept " << h << "\n";
  for (const auto& h : r->skipped_blobs_in_use) std::cout << "in use, kept blob " << h << "\n";
  std::cout << "freed " << HumanBytes(r->freed) << ", " << HumanBytes(r->remaining) << " remain\n";
  return kExitOk;
}

int SelfTest(const RunArgs& args) {
  auto device = ResolveCommandDevice(args.device);
  if (!device.ok()) return Fail("self-test", device.status());
  auto carton = LoadModel(args);
  if (!carton.ok()) return Fail("self-test", carton.status());
  auto session = Start(args, std::move(carton).value(), *device);
  if (!session.ok()) return Fail("self-test", session.status());
  safetensors::CompareOptions compare;
  compare.rtol = args.rtol;
  compare.atol = args.atol;
  Status runner_failure;
  auto report = runner::RunSelfTests(
      session->carton,
      [&](const std::vector<carton::Tensor>& in) -> Result<std::vector<carton::Tensor>> {
        auto out = session->process.Infer(in);
        if (!out.ok() && out.status().code() == StatusCode::kInternal && runner_failure.ok()) {
          runner_failure = out.status();
        }
        return out;
      },
      compare);
  // A runner that crashed or hung is trouble, not a verdict on the model.
  Status trouble = runner_failure;
  if (trouble.ok()) trouble = session->process.Close();
  if (args.json) {
    // One document: the report, and the trouble as its error.
    Json j = JsonDocument();
    j["model"] = args.model;
    j["ok"] = report.passed() && trouble.ok();
    Json details = Json::parse(runner::FormatReportJson(report));
    for (auto& [k, v] : details.items()) j[k] = std::move(v);
    j["device"] = device->Name();
    // "error" is the error document's key: a test's failure is a message.
    for (auto& t : j["tests"]) {
      if (t.contains("error")) {
        t["message"] = t["error"];
        t.erase("error");
      }
    }
    if (!trouble.ok()) j["error"] = ErrorJson(trouble);
    PrintJson(j);
  } else {
    std::cout << runner::FormatReport(report);
  }
  std::cout.flush();
  if (!trouble.ok()) return ReportError("self-test", trouble);
  return report.passed() ? kExitOk : kExitBadInput;
}

namespace {

// infer's --input values: NAME=FILE.safetensors[:TENSOR], or a
// FILE.safetensors alone, each of whose tensors is the input of its name.
Result<std::vector<carton::Tensor>> ReadInputs(const std::vector<std::string>& specs) {
  std::vector<carton::Tensor> inputs;
  for (const auto& spec : specs) {
    if (spec.find('=') == std::string::npos) {
      auto all = runner::ReadTensorsFile(spec);
      if (!all.ok()) return all.status().WithContext("--input " + spec);
      for (auto& t : *all) inputs.push_back(std::move(t));
      continue;
    }
    CARTON_ASSIGN_OR_RETURN(carton::Tensor t, runner::ReadTensorArg(spec));
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace

int Infer(const RunArgs& args) {
  if (args.output.empty()) return Fail("infer", InvalidArgument("--output is required"));
  // A mistake in --output costs nothing: checked before the load.
  if (Status s = CheckOutputPath(args.output, "the output .safetensors"); !s.ok()) {
    return Fail("infer", s);
  }
  auto read = ReadInputs(args.inputs);
  if (!read.ok()) return Fail("infer", read.status());
  auto device = ResolveCommandDevice(args.device);
  if (!device.ok()) return Fail("infer", device.status());
  std::vector<carton::Tensor> inputs = std::move(read).value();
  auto carton = LoadModel(args);
  if (!carton.ok()) return Fail("infer", carton.status());
  // Wrong inputs are refused here, before a runner starts: they are the
  // user's input, so exit 1.
  if (Status s = runner::CheckInputs(carton->config().inputs, inputs); !s.ok()) {
    const auto& declared = carton->config().inputs;
    if (!declared.empty()) s = s.WithContext(args.model);
    std::string message = s.message();
    if (!declared.empty()) message += " (declared inputs: " + DeclaredInputs(declared) + ")";
    if (!args.lenient) {
      return FailWith("infer", Status(s.code(), message + "; --lenient runs it anyway"),
                      kExitBadInput);
    }
    std::cerr << "carton infer: warning: " << message << '\n';
  }
  auto session = Start(args, std::move(carton).value(), *device);
  if (!session.ok()) return Fail("infer", session.status());
  auto outputs = session->process.Infer(inputs);
  if (!outputs.ok()) return Fail("infer", outputs.status());
  Status s = runner::WriteTensorsFile(args.output, *outputs);
  if (!s.ok()) return Fail("infer", s);
  s = session->process.Close();
  if (!s.ok()) return Fail("infer", s);
  // One line per output on stderr ("NAME DTYPE [SHAPE]"); stdout stays for
  // --json.
  Json outs = Json::array();
  for (const auto& t : *outputs) {
    outs.push_back(
        {{"name", t.name}, {"dtype", std::string(DataTypeName(t.dtype))}, {"shape", t.shape}});
    if (!args.json && !args.quiet) {
      std::cerr << "output " << t.name << ": " << DataTypeName(t.dtype) << ' ' << ShapeText(t.shape)
                << '\n';
    }
  }
  if (args.json) {
    Json j = JsonDocument();
    j["model"] = args.model;
    j["ok"] = true;
    j["output"] = args.output;
    j["outputs"] = std::move(outs);
    j["device"] = device->Name();
    PrintJson(j);
  }
  return kExitOk;
}

int Runners(bool json, bool quiet) {
  auto found = runner::FindRunners();
  Json a = Json::array();
  for (const auto& r : found) {
    if (json) {
      a.push_back({{"path", r.path},
                   {"runner_name", r.runner_name},
                   {"framework_version", r.framework_version},
                   {"runner_compat_version", r.runner_compat_version},
                   {"rejected", r.rejected}});
    } else if (r.rejected.empty()) {
      std::cout << r.runner_name << " " << r.framework_version << " (compat "
                << r.runner_compat_version << ")  " << r.path << "\n";
    } else {
      std::cout << "?  " << r.path << ": " << r.rejected << "\n";
    }
  }
  if (json) {
    Json j = JsonDocument();
    j["ok"] = true;
    j["runners"] = std::move(a);
    PrintJson(j);
  } else if (found.empty() && !quiet) {
    std::cerr << "carton runners: no carton-runner-* executables in";
    for (const auto& d : runner::RunnerSearchPath()) std::cerr << " " << d;
    std::cerr << " (set CARTON_RUNNER_PATH, or install runners beside carton)\n";
  }
  return kExitOk;
}

}  // namespace carton::cli
