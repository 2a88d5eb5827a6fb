#include <iostream>
#include <nlohmann/json.hpp>
#include <variant>

#include "carton/carton/info.h"
#include "carton/carton/pack.h"
#include "carton/carton/verify.h"
#include "carton/format/tensor_data.h"
#include "carton/runner/runner.h"
#include "commands.h"
#include "exit_code.h"
#include "oci_cmd.h"
#include "progress_flags.h"

namespace carton::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string ShapeText(const Shape& shape) {
  if (std::holds_alternative<AnyDim>(shape)) return "\"*\"";
  if (auto* s = std::get_if<SymbolDim>(&shape)) return "\"" + s->name + "\"";
  std::string out = "[";
  const auto& dims = std::get<std::vector<Dimension>>(shape);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    if (auto* n = std::get_if<std::uint64_t>(&dims[i]))
      out += std::to_string(*n);
    else if (auto* sym = std::get_if<SymbolDim>(&dims[i]))
      out += "\"" + sym->name + "\"";
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

Json InfoJson(const CartonInfo& info) {
  const auto& c = info.config;
  Json j;
  j["manifest_hash"] = manifest::ToHex(info.manifest_hash);
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
  j["files"] = Json::array();
  for (const auto& f : info.files) {
    j["files"].push_back({{"path", f.path},
                          {"size", f.size},
                          {"compressed_size", f.compressed_size},
                          {"method", f.method}});
  }
  j["tensors"] = Json::array();
  if (info.tensor_index) {
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
  return j;
}

void PrintInfo(const std::string& path, const CartonInfo& info) {
  const auto& c = info.config;
  auto line = [](const char* k, const std::optional<std::string>& v) {
    if (v && !v->empty()) std::cout << k << ": " << *v << '\n';
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
    for (const auto& p : c.required_platforms) std::cout << ' ' << p;
    std::cout << '\n';
  }
  auto specs = [](const char* title, const std::vector<TensorSpec>& v) {
    if (v.empty()) return;
    std::cout << title << ":\n";
    for (const auto& s : v) {
      std::cout << "  " << s.name << ": " << DataTypeName(s.dtype) << ' ' << ShapeText(s.shape);
      if (s.description) std::cout << "  " << *s.description;
      std::cout << '\n';
    }
  };
  specs("inputs", c.inputs);
  specs("outputs", c.outputs);
  if (!c.self_tests.empty()) std::cout << "self-tests: " << c.self_tests.size() << '\n';
  if (!c.examples.empty()) std::cout << "examples: " << c.examples.size() << '\n';
  if (info.tensor_index && !info.tensor_index->tensors.empty()) {
    std::cout << "tensors:\n";
    for (const auto& t : info.tensor_index->tensors) {
      std::cout << "  " << t.name << ": "
                << (t.nested() ? std::string("nested") : std::string(DataTypeName(*t.dtype)));
      if (!t.nested()) {
        std::cout << " [";
        for (std::size_t i = 0; i < t.shape.size(); ++i) std::cout << (i ? ", " : "") << t.shape[i];
        std::cout << "]";
      }
      std::cout << '\n';
    }
  }
  std::cout << "files:\n";
  for (const auto& f : info.files) {
    std::cout << "  " << f.path << "  " << f.size << " bytes  " << f.method;
    if (!f.linked && f.method != "stored") std::cout << " (" << f.compressed_size << ")";
    std::cout << '\n';
  }
  std::cout << "manifest hash: " << manifest::ToHex(info.manifest_hash) << '\n';
}

}  // namespace

int Pack(const PackArgs& a) {
  PackOptions o;
  static const std::pair<const char*, PackCompression> kMethods[] = {
      {"stored", PackCompression::kStored},
      {"deflate", PackCompression::kDeflate},
      {"zstd", PackCompression::kZstd},
      {"auto", PackCompression::kAuto}};
  bool known = false;
  for (const auto& [name, m] : kMethods) {
    if (a.compression == name) {
      o.compression = m;
      known = true;
    }
  }
  if (!known) {
    return Fail("pack",
                InvalidArgument("--compression must be stored, deflate, zstd or auto, not \"" +
                                a.compression + "\""));
  }
  o.level = a.level;
  o.alignment = a.align;
  o.threads = a.threads;
  if (!a.runner.empty() || !a.framework_version.empty()) {
    CartonConfig c;
    c.runner.runner_name = a.runner;
    c.runner.required_framework_version = a.framework_version;
    c.runner.runner_compat_version = a.compat_version;
    if (!a.name.empty()) c.model_name = a.name;
    if (!a.description.empty()) c.short_description = a.description;
    if (!a.license.empty()) c.license = a.license;
    for (const auto& opt : a.opts) {
      const auto eq = opt.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Fail("pack", InvalidArgument("--opt wants KEY=VALUE, not \"" + opt + "\""));
      }
      c.runner.opts[opt.substr(0, eq)] = runner::ParseRunnerOpt(opt.substr(eq + 1));
    }
    o.config_if_missing = std::move(c);
  }
  ProgressLine progress("packing " + a.output, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  auto r = carton::Pack(a.dir, a.output, o);
  progress.Finish();
  if (!r.ok()) return Fail("pack", r.status());
  std::uint64_t total = 0, packed = 0;
  for (const auto& f : r->files) {
    total += f.size;
    packed += f.compressed_size;
  }
  std::cerr << "packed " << r->files.size() << " files, " << total << " bytes into " << a.output
            << " (" << packed << " bytes of file data)\n";
  std::cout << manifest::ToHex(r->manifest_hash) << '\n';
  return kExitOk;
}

int Verify(const VerifyArgs& a) {
  VerifyOptions o;
  o.threads = a.threads;
  o.fetch_links = a.fetch;
  o.links.fetch.allow_file_links = a.allow_file_links;
  ProgressLine progress("verifying " + a.carton, !a.quiet);
  if (progress.enabled()) o.progress = progress.Callback();
  if (a.quiet) o.links.fetch.progress = Silent();
  auto r = links::oci::IsReference(a.carton)
               ? VerifyOciCarton(a.carton, o, OciOptionsFor(a.registry))
               : carton::Verify(a.carton, o);
  progress.Finish();
  if (!r.ok()) return Fail("verify", r.status());
  if (a.json) {
    Json j;
    j["carton"] = a.carton;
    j["valid"] = r->ok();
    j["manifest_hash"] =
        r->manifest_hash ? Json(manifest::ToHex(*r->manifest_hash)) : Json(nullptr);
    j["files_hashed"] = r->files_hashed;
    j["bytes_hashed"] = r->bytes_hashed;
    j["linked_files"] = r->linked_files;
    j["linked_fetched"] = r->linked_fetched;
    j["problems"] = Json::array();
    for (const auto& p : r->problems)
      j["problems"].push_back({{"where", p.where}, {"problem", p.message}});
    std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  } else if (r->ok()) {
    std::cout << a.carton << ": ok (" << r->files_hashed << " files, " << r->bytes_hashed
              << " bytes hashed";
    const std::uint64_t unfetched = r->linked_files - r->linked_fetched;
    if (unfetched > 0) {
      std::cout << "; " << unfetched << " linked file" << (unfetched == 1 ? "" : "s")
                << " not fetched (--fetch)";
    }
    std::cout << ")\n";
  }
  for (const auto& p : r->problems) {
    std::cerr << "carton verify: " << a.carton << ": " << (p.where.empty() ? "" : p.where + ": ")
              << p.message << '\n';
  }
  return r->ok() ? kExitOk : kExitBadInput;
}

int Info(const InfoArgs& a) {
  auto r = links::oci::IsReference(a.carton) ? ReadOciInfo(a.carton, OciOptionsFor(a.registry))
                                             : ReadInfo(a.carton);
  if (!r.ok()) return Fail("info", r.status());
  if (a.json) {
    std::cout << InfoJson(*r).dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  } else {
    PrintInfo(a.carton, *r);
  }
  return kExitOk;
}

int Unpack(const UnpackArgs& a) {
  LinkOptions o;
  o.fetch.allow_file_links = a.allow_file_links;
  if (a.quiet) o.fetch.progress = Silent();
  UnpackOptions unpack;
  ProgressLine progress("unpacking " + a.carton, !a.quiet);
  if (progress.enabled()) unpack.progress = progress.Callback();
  Status s = carton::Unpack(a.carton, a.dir, o, unpack);
  progress.Finish();
  if (!s.ok()) return Fail("unpack", s);
  return kExitOk;
}

int Hash(const std::string& carton, const RegistryArgs& registry) {
  auto r = links::oci::IsReference(carton) ? OciManifestHash(carton, OciOptionsFor(registry))
                                           : ManifestHash(carton);
  if (!r.ok()) return Fail("hash", r.status());
  std::cout << manifest::ToHex(*r) << '\n';
  return kExitOk;
}

int TensorsImport(const std::string& file, const std::string& dir) {
  Status s = ImportSafetensors(file, dir);
  return s.ok() ? kExitOk : Fail("tensors import", s);
}

int TensorsExport(const std::string& dir, const std::string& file) {
  Status s = ExportSafetensors(dir, file);
  return s.ok() ? kExitOk : Fail("tensors export", s);
}

}  // namespace carton::cli
