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
#include "carton/runner/model.h"
#include "carton/runner/select.h"
#include "carton/runner/self_test.h"
#include "carton/runner/tensor_file.h"
#include "commands.h"
#include "environment_args.h"
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

// Loads `model` through the cache with `env`, drawing a progress line
// unless `quiet` (which also silences the library's download line).
Result<loader::LoadedCarton> LoadWithProgress(const std::string& model, const Environment& env,
                                              loader::LoadOptions options, bool quiet) {
  ProgressLine progress("loading " + model, !quiet);
  if (progress.enabled()) options.progress = progress.Callback();
  auto source = CommandSource(model, env, "load", options.progress);
  auto carton =
      source.ok() ? loader::Load(**source, options) : Result<loader::LoadedCarton>(source.status());
  progress.Finish();
  return carton;
}

// The model of `args`, its runner started: the options of every shell
// (runner::Model), from the flags. `command` names it in warnings.
Result<runner::Model> OpenModel(const RunArgs& args, const std::string& command,
                                const loader::Device& device,
                                const std::vector<carton::Tensor>* first_inputs = nullptr) {
  CARTON_ASSIGN_OR_RETURN(const Environment env, CommandEnvironment(args.env, args.quiet));
  runner::ModelOptions options;
  options.device = device;
  options.infer_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(args.timeout * 1000));
  options.lenient = args.lenient;
  if (!args.runner_name.empty()) options.runner_name = args.runner_name;
  if (!args.framework_version.empty()) options.framework_version = args.framework_version;
  for (const auto& o : args.opts) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgument("--opt wants KEY=VALUE");
    options.runner_opts[o.substr(0, eq)] = o.substr(eq + 1);
  }
  options.first_inputs = first_inputs;
  options.on_warning = [command](std::string_view text) {
    std::cerr << "carton " << command << ": warning: " << text << '\n';
  };
  ProgressLine progress("loading " + args.model, !args.quiet);
  if (progress.enabled()) options.load.progress = progress.Callback();
  auto model = runner::Model::Open(args.model, env, options);
  progress.Finish();
  return model;
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
  auto env = CommandEnvironment(args.env, args.quiet);
  if (!env.ok()) return Fail("load", env.status());
  loader::LoadOptions options;
  options.verify_cache_hit = args.verify;
  auto c = LoadWithProgress(args.model, *env, options, args.quiet);
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
  auto model = OpenModel(args, "self-test", *device);
  if (!model.ok()) return Fail("self-test", model.status());
  safetensors::CompareOptions compare;
  compare.rtol = args.rtol;
  compare.atol = args.atol;
  runner::SelfTestReport verdict;
  // A runner that crashed or hung is trouble, not a verdict on the model.
  Status trouble = model->SelfTest(compare, &verdict);
  if (trouble.ok()) trouble = model->Close();
  if (args.json) {
    // One document: the report, and the trouble as its error.
    Json j = JsonDocument();
    j["model"] = args.model;
    j["ok"] = verdict.passed() && trouble.ok();
    Json details = Json::parse(runner::FormatReportJson(verdict));
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
    std::cout << runner::FormatReport(verdict);
  }
  std::cout.flush();
  if (!trouble.ok()) return ReportError("self-test", trouble);
  return verdict.passed() ? kExitOk : kExitBadInput;
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
  // Inputs that do not fit the declarations are the user's input (exit
  // 1), refused before a runner starts.
  auto misfit = [](const Status& s) {
    return s.code() == StatusCode::kInvalidArgument && s.detail() == runner::kInputsDoNotFit;
  };
  auto model = OpenModel(args, "infer", *device, &inputs);
  if (!model.ok()) {
    if (misfit(model.status())) return FailWith("infer", model.status(), kExitBadInput);
    return Fail("infer", model.status());
  }
  auto outputs = model->Infer(inputs);
  if (!outputs.ok()) {
    if (misfit(outputs.status())) return FailWith("infer", outputs.status(), kExitBadInput);
    return Fail("infer", outputs.status());
  }
  Status s = runner::WriteTensorsFile(args.output, *outputs);
  if (!s.ok()) return Fail("infer", s);
  s = model->Close();
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
