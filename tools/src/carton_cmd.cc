#include <algorithm>
#include <filesystem>
#include <iostream>
#include <variant>

#include "carton/carton/info.h"
#include "carton/carton/pack.h"
#include "carton/carton/unpack.h"
#include "carton/carton/verify.h"
#include "carton/common/progress.h"
#include "carton/common/quote.h"
#include "carton/format/tensor_data.h"
#include "carton/loader/loader.h"
#include "carton/runner/runner.h"
#include "commands.h"
#include "environment_args.h"
#include "exit_code.h"
#include "json_out.h"
#include "pack_cmd.h"
#include "progress_flags.h"
#include "sign_cmd.h"

namespace carton::cli {
namespace {

std::string ShapeText(const Shape& shape) {
  if (std::holds_alternative<AnyDim>(shape)) return "\"*\"";
  if (auto* s = std::get_if<SymbolDim>(&shape)) return QuoteForMessage(s->name);
  std::string out = "[";
  const auto& dims = std::get<std::vector<Dimension>>(shape);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    if (auto* n = std::get_if<std::uint64_t>(&dims[i]))
      out += std::to_string(*n);
    else if (auto* sym = std::get_if<SymbolDim>(&dims[i]))
      out += QuoteForMessage(sym->name);
    else
      out += "\"*\"";
  }
  return out + "]";
}

Json SpecsJson(const std::vector<TensorSpec>& specs) {
  Json a = Json::array();
  for (const auto& s : specs) {
    Json j;
    j["name"] = s.name;
    j["dtype"] = std::string(DataTypeName(s.dtype));
    j["shape"] = Json::parse(ShapeText(s.shape));
    if (s.description) j["description"] = *s.description;
    a.push_back(std::move(j));
  }
  return a;
}

Json RefsJson(const TensorRefs& refs) {
  Json j = Json::object();
  for (const auto& [k, v] : refs) j[k] = v;
  return j;
}

// carton.toml's metadata and runner, as `info --json` shows them.
void AddConfigJson(const CartonConfig& c, Json* out) {
  Json& j = *out;
  auto opt = [&](const char* key, const std::optional<std::string>& v) {
    j[key] = v ? Json(*v) : Json(nullptr);
  };
  opt("model_name", c.model_name);
  opt("short_description", c.short_description);
  opt("model_description", c.model_description);
  opt("license", c.license);
  opt("repository", c.repository);
  opt("homepage", c.homepage);
  j["required_platforms"] = c.required_platforms;
  j["runner"] = {{"runner_name", c.runner.runner_name},
                 {"required_framework_version", c.runner.required_framework_version},
                 {"runner_compat_version", c.runner.runner_compat_version}};
  Json opts = Json::object();
  for (const auto& opt : c.runner.opts) {
    std::visit([&](const auto& x) { opts[opt.first] = x; }, opt.second);
  }
  j["runner"]["opts"] = std::move(opts);
  j["inputs"] = SpecsJson(c.inputs);
  j["outputs"] = SpecsJson(c.outputs);
}

// The self-tests' and examples' tensor references.
void AddTensorSetsJson(const CartonConfig& c, Json* out) {
  Json& j = *out;
  j["self_tests"] = Json::array();
  for (const auto& t : c.self_tests) {
    Json e;
    e["name"] = t.name ? Json(*t.name) : Json(nullptr);
    e["inputs"] = RefsJson(t.inputs);
    e["expected_out"] = t.expected_out ? RefsJson(*t.expected_out) : Json(nullptr);
    j["self_tests"].push_back(std::move(e));
  }
  j["examples"] = Json::array();
  for (const auto& x : c.examples) {
    Json e;
    e["name"] = x.name ? Json(*x.name) : Json(nullptr);
    e["inputs"] = RefsJson(x.inputs);
    e["sample_out"] = RefsJson(x.sample_out);
    j["examples"].push_back(std::move(e));
  }
}

// The files and the tensor index.
void AddContentsJson(const CartonInfo& info, Json* out) {
  Json& j = *out;
  j["files"] = Json::array();
  for (const auto& f : info.files) {
    j["files"].push_back({{"path", f.path},
                          {"size", f.size},
                          {"compressed_size", f.compressed_size},
                          {"method", f.method},
                          {"linked", f.linked}});
  }
  j["tensors"] = Json::array();
  if (!info.tensor_index) return;
  for (const auto& t : info.tensor_index->tensors) {
    Json e;
    e["name"] = t.name;
    e["dtype"] = t.nested() ? "nested" : std::string(DataTypeName(*t.dtype));
    if (t.nested())
      e["inner"] = t.inner;
    else
      e["shape"] = t.shape;
    j["tensors"].push_back(std::move(e));
  }
}

Json InfoJson(const std::string& model, const CartonInfo& info) {
  Json j;
  j["model"] = model;
  j["ok"] = true;
  j["manifest_hash"] = manifest::ToHex(info.manifest_hash);
  AddConfigJson(info.config, &j);
  AddTensorSetsJson(info.config, &j);
  AddContentsJson(info, &j);
  return j;
}

// info's lists are tables: each row's cells padded to the widest cell of
// their column (the last is not padded), as `docker images` prints.
using Table = std::vector<std::vector<std::string>>;

// The width of `s` on a terminal: its code points (ShowText has escaped
// every control character, and bytes of invalid UTF-8).
std::size_t TextWidth(std::string_view s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

// `title`: then the rows, indented by two spaces, two spaces between
// columns. Nothing when `rows` is empty.
void PrintTable(const char* title, const Table& rows) {
  if (rows.empty()) return;
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], TextWidth(row[i]));
    }
  }
  std::cout << title << ":\n";
  for (const auto& row : rows) {
    std::string line = "  ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - TextWidth(row[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << '\n';
  }
}

// name, dtype, shape, description: one row per [[input]] or [[output]].
Table SpecRows(const std::vector<TensorSpec>& specs) {
  Table rows;
  for (const auto& s : specs) {
    rows.push_back({ShowText(s.name), std::string(DataTypeName(s.dtype)), ShapeText(s.shape),
                    s.description ? ShowText(*s.description, /*multiline=*/true) : ""});
  }
  return rows;
}

// "x=t1, y=t2": a self-test's or example's tensor references.
std::string RefsText(const TensorRefs& refs) {
  std::string out;
  for (const auto& [k, v] : refs)
    out += (out.empty() ? "" : ", ") + ShowText(k) + "=" + ShowText(v);
  return out;
}

// name (or #N), inputs, outputs: one row per [[self_test]] or [[example]].
template <typename Sets, typename Outputs>
Table RefRows(const Sets& sets, const char* outputs_label, Outputs outputs) {
  Table rows;
  for (std::size_t n = 0; n < sets.size(); ++n) {
    const auto& t = sets[n];
    const std::string out = outputs(t);
    rows.push_back({t.name ? ShowText(*t.name) : "#" + std::to_string(n + 1),
                    "inputs: " + RefsText(t.inputs),
                    out.empty() ? "" : std::string(outputs_label) + ": " + out});
  }
  return rows;
}

// name, dtype, shape: one row per tensor of tensor_data/index.toml.
Table TensorRows(const CartonInfo& info) {
  Table rows;
  if (!info.tensor_index) return rows;
  for (const auto& t : info.tensor_index->tensors) {
    std::string shape;
    if (!t.nested()) {
      shape = "[";
      for (std::size_t i = 0; i < t.shape.size(); ++i) {
        shape += (i ? ", " : "") + std::to_string(t.shape[i]);
      }
      shape += "]";
    }
    rows.push_back(
        {ShowText(t.name), t.nested() ? "nested" : std::string(DataTypeName(*t.dtype)), shape});
  }
  return rows;
}

// path, size, method (and the stored size of a compressed file).
Table FileRows(const CartonInfo& info) {
  Table rows;
  for (const auto& f : info.files) {
    std::string method = f.method;
    if (!f.linked && f.method != "stored") {
      method += " (" + std::to_string(f.compressed_size) + ")";
    }
    rows.push_back({ShowText(f.path), std::to_string(f.size) + " bytes", method});
  }
  return rows;
}

void PrintInfo(const std::string& path, const CartonInfo& info) {
  const auto& c = info.config;
  auto line = [](const char* k, const std::optional<std::string>& v) {
    if (v && !v->empty()) std::cout << k << ": " << ShowText(*v, /*multiline=*/true) << '\n';
  };
  std::cout << "carton: " << path << '\n';
  line("name", c.model_name);
  line("description", c.short_description);
  line("license", c.license);
  line("repository", c.repository);
  line("homepage", c.homepage);
  std::cout << "runner: " << c.runner.runner_name << " (framework "
            << c.runner.required_framework_version << ", compat " << c.runner.runner_compat_version
            << ")\n";
  if (!c.required_platforms.empty()) {
    std::cout << "platforms:";
    for (const auto& p : c.required_platforms) std::cout << ' ' << ShowText(p);
    std::cout << '\n';
  }
  PrintTable("inputs", SpecRows(c.inputs));
  PrintTable("outputs", SpecRows(c.outputs));
  PrintTable("self-tests", RefRows(c.self_tests, "expected", [](const carton::SelfTest& t) {
               return t.expected_out ? RefsText(*t.expected_out) : std::string();
             }));
  PrintTable("examples", RefRows(c.examples, "sample out",
                                 [](const carton::Example& x) { return RefsText(x.sample_out); }));
  PrintTable("tensors", TensorRows(info));
  if (info.files.empty()) std::cout << "files:\n";
  PrintTable("files", FileRows(info));
  std::cout << "manifest hash: " << manifest::ToHex(info.manifest_hash) << '\n';
  // info reads metadata only: a damaged file would not show here.
  std::cout << "(files not verified: `carton verify` hashes every one)\n";
}

}  // namespace

int Pack(const PackArgs& a) {
  PackDescription d;
  PackOptions& o = d.options;
  auto method = ParsePackCompression(a.compression);
  if (!method.ok()) return Fail("pack", method.status().WithContext("--compression"));
  o.compression = *method;
  o.level = a.level;
  o.alignment = a.align;
  o.threads = a.threads;
  Status described = DescribeForPack(a, &d);
  if (!described.ok()) return Fail("pack", described);
  ProgressLine progress("packing " + a.output, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  auto r = carton::Pack(d, a.output);
  progress.Finish();
  if (!r.ok()) return FailEachLine("pack", r.status());
  PrintPackNotes(*r);
  std::uint64_t total = 0, packed = 0;
  for (const auto& f : r->files) {
    total += f.size;
    packed += f.compressed_size;
  }
  if (a.json) {
    Json j = JsonDocument();
    j["model"] = a.output;
    j["ok"] = true;
    j["manifest_hash"] = manifest::ToHex(r->manifest_hash);
    j["bytes"] = total;
    j["compressed_bytes"] = packed;
    j["warnings"] = r->warnings;
    j["left_out"] = r->skipped_by_default;
    j["files"] = Json::array();
    for (const auto& f : r->files) {
      j["files"].push_back({{"path", f.path},
                            {"size", f.size},
                            {"compressed_size", f.compressed_size},
                            {"method", std::string(CompressionName(f.method))},
                            {"sha256", manifest::ToHex(f.sha256)}});
    }
    PrintJson(j);
    return kExitOk;
  }
  if (!a.quiet) {
    std::cerr << "packed " << r->files.size() << " files, " << HumanBytes(total) << ", into "
              << a.output << " (" << HumanBytes(packed) << " of file data)\n";
  }
  std::cout << manifest::ToHex(r->manifest_hash) << '\n';
  return kExitOk;
}

namespace {

// Problems verify prints per carton on stderr; --json lists every one.
constexpr std::size_t kMaxProblemLines = 100;

// One MODEL of verify, info or hash: its document (without "schema") goes
// to `results`, its human lines to stdout and stderr. Returns the exit code.
// verify's document of one carton's report.
Json VerifyJson(const std::string& model, const VerifyReport& r) {
  Json j;
  j["model"] = model;
  j["ok"] = r.ok();
  j["manifest_hash"] = r.manifest_hash ? Json(manifest::ToHex(*r.manifest_hash)) : Json(nullptr);
  j["files_hashed"] = r.files_hashed;
  j["bytes_hashed"] = r.bytes_hashed;
  j["linked_files"] = r.linked_files;
  j["linked_fetched"] = r.linked_fetched;
  j["warnings"] = r.warnings;
  j["problems"] = Json::array();
  for (const auto& p : r.problems) {
    j["problems"].push_back({{"where", p.where}, {"message", p.message}});
  }
  return j;
}

// What verify's "ok" line says of a good carton: "4 files, 100 bytes
// hashed" and the linked files not fetched.
std::string OkDetails(const VerifyReport& r) {
  std::string out = std::to_string(r.files_hashed) + " files, " + std::to_string(r.bytes_hashed) +
                    " bytes hashed";
  const std::uint64_t unfetched = r.linked_files - r.linked_fetched;
  if (unfetched > 0) {
    out += "; " + std::to_string(unfetched) + " linked file" + (unfetched == 1 ? "" : "s") +
           " not fetched (--fetch)";
  }
  return out;
}

// verify's lines for one carton: "ok" on stdout (unless --json, or
// `ok_line` is false: the signature check prints it), warnings and
// problems on stderr.
void PrintVerify(const std::string& model, const VerifyReport& r, bool json, bool ok_line) {
  if (!json && ok_line && r.ok()) std::cout << model << ": ok (" << OkDetails(r) << ")\n";
  for (const auto& w : r.warnings) {
    std::cerr << "carton verify: warning: " << model << ": " << w << '\n';
  }
  // A carton can break one rule a million times (a MANIFEST listing a
  // million missing files): the first problems are shown, the rest counted.
  const std::size_t shown = std::min(r.problems.size(), kMaxProblemLines);
  if (shown < r.problems.size()) {
    std::cerr << "carton verify: " << model << ": " << r.problems.size() << " problems; the first "
              << shown << " follow (--json lists every one)\n";
  }
  for (std::size_t k = 0; k < shown; ++k) {
    const VerifyProblem& p = r.problems[k];
    // Each of the carton and the entry is named once: a message may name
    // them already ("f.carton: entry \"model/t.txt\": ...",
    // "carton.toml:3:15: ...").
    const bool says_where = !p.where.empty() && p.message.starts_with(p.where) &&
                            (p.message.size() == p.where.size() ||
                             p.message[p.where.size()] == ':' || p.message[p.where.size()] == ' ');
    Status line(StatusCode::kCorrupt, p.message);
    if (!says_where) line = line.WithContext(p.where);
    std::cerr << "carton verify: " << line.WithContext(model).message() << '\n';
  }
}

// `trusted`: the signature is checked too (--key, --ca), through the same
// source (a URL downloaded or an artifact pulled once).
int VerifyOne(const VerifyArgs& a, const Environment& env, const std::string& model,
              const sign::TrustedSigners* trusted, Json* results) {
  auto source = CommandSource(model, env, "verify");
  if (!source.ok()) {
    results->push_back({{"model", model}, {"ok", false}, {"error", ErrorJson(source.status())}});
    return ReportError("verify", source.status());
  }
  if (trusted != nullptr && !(*source)->directory().empty()) {
    return VerifyDirectorySignature(a, **source, *trusted, results);
  }
  VerifyOptions o;
  o.fetch_links = a.fetch;
  ProgressLine progress("verifying " + model, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  Result<VerifyReport> r = carton::Verify(**source, o);
  progress.Finish();
  if (!r.ok()) {
    results->push_back({{"model", model}, {"ok", false}, {"error", ErrorJson(r.status())}});
    return ReportError("verify", r.status());
  }
  Json doc = VerifyJson(model, *r);
  PrintVerify(model, *r, a.json, /*ok_line=*/trusted == nullptr);
  int rc = r->ok() ? kExitOk : kExitBadInput;
  if (trusted != nullptr) {
    const std::string ok = r->ok() ? OkDetails(*r) : "";
    rc = std::max(rc, CheckSignatureOf(a, **source, *trusted, ok, &doc));
  }
  results->push_back(std::move(doc));
  return rc;
}

}  // namespace

int Verify(const VerifyArgs& a) {
  auto env = CommandEnvironment(a.env, a.quiet);
  if (!env.ok()) return Fail("verify", env.status());
  std::optional<sign::TrustedSigners> trusted;
  if (a.wants_signature()) {
    if (!a.signature.empty() && a.cartons.size() > 1) {
      return Fail("verify", InvalidArgument("--signature names the signature of one MODEL; "
                                            "give one, or leave it out for each one's own"));
    }
    auto t = TrustedFromArgs(a);
    if (!t.ok()) return Fail("verify", t.status());
    trusted = std::move(*t);
  } else if (!a.signature.empty() || !a.identities.empty()) {
    return Fail("verify", InvalidArgument("--signature and --identity need --key or --ca"));
  }
  int worst = kExitOk;
  Json results = Json::array();
  for (const auto& model : a.cartons) {
    worst = std::max(worst, VerifyOne(a, *env, model, trusted ? &*trusted : nullptr, &results));
  }
  if (a.json) PrintJsonResults(std::move(results));
  return worst;
}

namespace {

// The source of `model` and its info: the signature it keeps is shown with
// it, read through the same source.
Result<CartonInfo> InfoOf(const std::string& model, const Environment& env,
                          std::unique_ptr<CartonSource>* source) {
  CARTON_ASSIGN_OR_RETURN(*source, CommandSource(model, env, "info"));
  return (*source)->Info();
}

Result<manifest::Digest> HashOf(const std::string& model, const Environment& env) {
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(model, env, "hash"));
  return source->ManifestHash();
}

Result<std::string> UnpackInto(const std::string& model, const std::string& dir,
                               const Environment& env, const UnpackOptions& options) {
  CARTON_ASSIGN_OR_RETURN(auto source, CommandSource(model, env, "unpack"));
  return carton::Unpack(*source, dir, options);
}

}  // namespace

int Info(const InfoArgs& a) {
  auto env = CommandEnvironment(a.env);
  if (!env.ok()) return Fail("info", env.status());
  int worst = kExitOk;
  Json results = Json::array();
  for (std::size_t n = 0; n < a.cartons.size(); ++n) {
    const std::string& model = a.cartons[n];
    std::unique_ptr<CartonSource> source;
    auto r = InfoOf(model, *env, &source);
    if (!r.ok()) {
      worst = std::max(worst, ReportError("info", r.status()));
      results.push_back({{"model", model}, {"ok", false}, {"error", ErrorJson(r.status())}});
      continue;
    }
    Json doc = InfoJson(model, *r);
    if (!a.json) {
      if (n > 0) std::cout << '\n';
      PrintInfo(model, *r);
    }
    AddSignatureInfo(*source, r->manifest_hash, !a.json, &doc);
    results.push_back(std::move(doc));
  }
  if (a.json) PrintJsonResults(std::move(results));
  return worst;
}

int Unpack(const UnpackArgs& a) {
  auto env = CommandEnvironment(a.env, a.quiet);
  if (!env.ok()) return Fail("unpack", env.status());
  UnpackOptions unpack;
  ProgressLine progress("unpacking " + a.carton, !a.quiet);
  if (progress.enabled()) unpack.progress = progress.Callback();
  // Without DIR, Unpack chooses ./<model_name> (or the file stem) once it
  // has read carton.toml.
  Result<std::string> dir = UnpackInto(a.carton, a.dir, *env, unpack);
  progress.Finish();
  if (!dir.ok()) return Fail("unpack", dir.status());
  if (a.json) {
    Json j = JsonDocument();
    j["model"] = a.carton;
    j["ok"] = true;
    j["dir"] = *dir;
    PrintJson(j);
  } else if (a.dir.empty() && !a.quiet) {
    // The directory was chosen here: say which.
    std::cerr << "unpacked " << a.carton << " into " << *dir << "/\n";
  }
  return kExitOk;
}

int Hash(const HashArgs& a) {
  auto env = CommandEnvironment(a.env);
  if (!env.ok()) return Fail("hash", env.status());
  int worst = kExitOk;
  Json results = Json::array();
  for (const auto& model : a.cartons) {
    auto r = HashOf(model, *env);
    if (!r.ok()) {
      worst = std::max(worst, ReportError("hash", r.status()));
      results.push_back({{"model", model}, {"ok", false}, {"error", ErrorJson(r.status())}});
      continue;
    }
    results.push_back({{"model", model}, {"ok", true}, {"manifest_hash", manifest::ToHex(*r)}});
    if (a.json) continue;
    // One MODEL: the hash alone; several: sha256sum's "<hash>  <name>".
    std::cout << manifest::ToHex(*r);
    if (a.cartons.size() > 1) std::cout << "  " << model;
    std::cout << '\n';
  }
  if (a.json) PrintJsonResults(std::move(results));
  return worst;
}

namespace {

// {"ok": true, "file": ..., "dir": ...}: what tensors import/export wrote.
void PrintTensorsJson(const TensorsArgs& a) {
  Json j = JsonDocument();
  j["ok"] = true;
  j["file"] = a.file;
  j["dir"] = a.dir;
  PrintJson(j);
}

}  // namespace

int TensorsImport(const TensorsArgs& a) {
  Status s = ImportSafetensors(a.file, a.dir);
  if (!s.ok()) return Fail("tensors import", s);
  if (a.json) PrintTensorsJson(a);
  return kExitOk;
}

int TensorsExport(const TensorsArgs& a) {
  Status s = ExportSafetensors(a.dir, a.file);
  if (!s.ok()) return Fail("tensors export", s);
  if (a.json) PrintTensorsJson(a);
  return kExitOk;
}

}  // namespace carton::cli
