// carton.get_model_info, hash, verify, pack and shrink: thin calls into
// carton/ (source.h, verify.h, pack.h, links.h) with the process's
// Environment (loader/environment.h), the GIL released while they read,
// hash and write.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <map>
#include <optional>

#include "bindings.h"
#include "carton/carton/info.h"
#include "carton/carton/links.h"
#include "carton/carton/pack.h"
#include "carton/carton/source.h"
#include "carton/carton/verify.h"
#include "carton/format/tensor_data.h"
#include "carton/loader/environment.h"
#include "config_convert.h"
#include "stage.h"

namespace carton::python {
namespace {

namespace fs = std::filesystem;

std::string TypeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

py::dict InfoToPython(const CartonInfo& info) {
  py::dict d = ConfigToPython(info.config);
  d["manifest_sha256"] = manifest::ToHex(info.manifest_hash);
  py::list files;
  for (const auto& f : info.files) {
    py::dict e;
    e["path"] = f.path;
    e["size"] = f.size;
    e["compressed_size"] = f.compressed_size;
    e["method"] = f.method;
    e["linked"] = f.linked;
    files.append(std::move(e));
  }
  d["files"] = std::move(files);
  py::list tensors;
  if (info.tensor_index) {
    for (const auto& t : info.tensor_index->tensors) {
      py::dict e;
      e["name"] = t.name;
      e["dtype"] = t.nested() ? std::string("nested") : std::string(DataTypeName(*t.dtype));
      e["shape"] = t.nested() ? py::object(py::none()) : py::object(py::cast(t.shape));
      e["inner"] = py::cast(t.inner);
      tensors.append(std::move(e));
    }
  }
  d["tensors"] = std::move(tensors);
  d["has_links"] = info.has_links;
  return d;
}

// Where a carton is, parsed once here: a bad location raises at once.
Location ParseLocation(const std::string& text) { return Unwrap(Location::Parse(text)); }

// The source of `location` for `operation`, with the process's defaults
// and what the call's keywords set.
Result<std::unique_ptr<CartonSource>> SourceOf(const Location& location, const char* operation,
                                               bool allow_file_links = false) {
  CARTON_ASSIGN_OR_RETURN(Environment env, loader::DefaultEnvironment());
  env.network.allow_file_links = allow_file_links;
  return OpenSource(location, env, {.operation = operation});
}

py::dict GetModelInfo(const std::string& path_or_url) {
  const Location location = ParseLocation(path_or_url);
  return InfoToPython(Unwrap(WithoutGil([&]() -> Result<CartonInfo> {
    CARTON_ASSIGN_OR_RETURN(auto source, SourceOf(location, "info"));
    return source->Info();
  })));
}

std::string ManifestHashOf(const std::string& path_or_url) {
  const Location location = ParseLocation(path_or_url);
  return manifest::ToHex(Unwrap(WithoutGil([&]() -> Result<manifest::Digest> {
    CARTON_ASSIGN_OR_RETURN(auto source, SourceOf(location, "hash"));
    return source->ManifestHash();
  })));
}

py::dict VerifyCarton(const std::string& path_or_url, bool fetch_links, bool allow_file_links) {
  const Location location = ParseLocation(path_or_url);
  VerifyOptions options;
  options.fetch_links = fetch_links;
  const VerifyReport r = Unwrap(WithoutGil([&]() -> Result<VerifyReport> {
    CARTON_ASSIGN_OR_RETURN(auto source, SourceOf(location, "verify", allow_file_links));
    return Verify(*source, options);
  }));
  py::dict d;
  d["carton"] = path_or_url;
  d["ok"] = r.ok();
  d["manifest_hash"] =
      r.manifest_hash ? py::object(py::str(manifest::ToHex(*r.manifest_hash))) : py::none();
  d["files_hashed"] = r.files_hashed;
  d["bytes_hashed"] = r.bytes_hashed;
  d["linked_files"] = r.linked_files;
  d["linked_fetched"] = r.linked_fetched;
  py::list problems;
  for (const auto& p : r.problems) {
    py::dict e;
    e["where"] = p.where;
    // Messages quote entry names from the archive, which need not be
    // UTF-8: undecodable bytes are replaced, as `carton verify --json` does.
    e["problem"] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
        p.message.data(), static_cast<Py_ssize_t>(p.message.size()), "replace"));
    problems.append(std::move(e));
  }
  d["problems"] = std::move(problems);
  py::list warnings;
  for (const auto& w : r.warnings) warnings.append(w);
  d["warnings"] = std::move(warnings);
  return d;
}

// {sha256 hex: [url, ...]} as digests. Raises InvalidArgument.
std::map<manifest::Digest, std::vector<std::string>> UrlsFromPython(py::handle urls,
                                                                    const std::string& what) {
  std::map<manifest::Digest, std::vector<std::string>> out;
  if (urls.is_none()) return out;
  if (!PyDict_Check(urls.ptr())) {
    Raise(InvalidArgument(what + " must be a dict of {sha256: [url, ...]}, not " + TypeName(urls)));
  }
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(urls)) {
    if (!PyUnicode_Check(key.ptr())) {
      Raise(InvalidArgument(what + ": a key has type " + TypeName(key) + ", not str"));
    }
    const std::string hex = py::cast<std::string>(key);
    auto digest = manifest::ParseHex(hex);
    if (!digest) {
      Raise(InvalidArgument(what + ": \"" + hex + "\" is not a sha256 (64 lowercase hex digits)"));
    }
    if (PyUnicode_Check(value.ptr()) || !py::isinstance<py::iterable>(value)) {
      Raise(InvalidArgument(what + "[\"" + hex + "\"] must be a list of urls, not " +
                            TypeName(value)));
    }
    auto& list = out[*digest];
    for (py::handle url : value) {
      if (!PyUnicode_Check(url.ptr())) {
        Raise(InvalidArgument(what + "[\"" + hex + "\"]: a url has type " + TypeName(url) +
                              ", not str"));
      }
      list.push_back(py::cast<std::string>(url));
    }
  }
  return out;
}

std::string ShrinkCarton(const std::string& path, const std::string& output, py::handle urls) {
  auto digests = UrlsFromPython(urls, "urls");
  if (digests.empty()) Raise(InvalidArgument("urls is empty: it names no file to move to LINKS"));
  ShrinkOptions options;
  options.urls = std::move(digests);
  const Location location = ParseLocation(path);
  auto report = WithoutGil([&]() -> Result<ShrinkReport> {
    CARTON_ASSIGN_OR_RETURN(auto source, SourceOf(location, "shrink"));
    return Shrink(*source, output, options);
  });
  return manifest::ToHex(Unwrap(std::move(report)).manifest_hash);
}

PackCompression CompressionFromName(const std::string& name) {
  auto parsed = ParsePackCompression(name);
  if (!parsed.ok()) Raise(parsed.status().WithContext("compression"));
  return *parsed;
}

// The PackDescription of carton.pack's arguments: the path as it is (the
// same layouts as `carton pack`), the config when runner_name is given
// (replacing the path's carton.toml), the self-tests' and examples' tensors
// and the misc files as files added beside the path's, and the linked
// files. GIL: REQUIRES it.
PackDescription DescribePack(const std::string& path, py::handle config, py::handle self_tests,
                             py::handle examples, py::handle misc_files, py::handle linked_files,
                             const std::string& compression) {
  PackDescription d;
  d.path = path;
  d.options.compression = CompressionFromName(compression);
  d.links = UrlsFromPython(linked_files, "linked_files");
  StageContents contents;
  if (!config.is_none())
    contents.config = ConfigFromPython(py::reinterpret_borrow<py::dict>(config));
  // Self-tests are laid out by the library, as `carton pack --self-test`
  // lays them out; examples are staged as extra files.
  d.self_tests = PackSelfTestsFromPython(self_tests, contents.config);
  AddTensorSets(&contents, py::list(), examples);
  AddMiscFiles(&contents, misc_files);
  const bool tensors =
      !contents.tensor_data.tensors.empty() || !contents.tensor_data.nested.empty();
  if (config.is_none()) {
    if (tensors || !d.self_tests.empty() || !contents.config.examples.empty()) {
      Raise(InvalidArgument(
          "self_tests and examples are written into the carton.toml that runner_name and "
          "required_framework_version describe; give those too (or write the self-tests into " +
          path + "/carton.toml)"));
    }
  } else {
    d.config = contents.config;
    d.config_use = PackConfigUse::kReplace;
  }
  if (tensors) {
    for (auto& f : Unwrap(EncodeTensorData(contents.tensor_data))) {
      d.extra_files.push_back({"tensor_data/" + f.name, std::move(f.bytes)});
    }
  }
  for (auto& [name, bytes] : contents.misc_files) {
    d.extra_files.push_back({"misc/" + name, std::move(bytes)});
  }
  return d;
}

std::string PackModel(const std::string& path, const std::string& output, py::handle config,
                      py::handle self_tests, py::handle examples, py::handle misc_files,
                      py::handle linked_files, const std::string& compression) {
  const PackDescription d =
      DescribePack(path, config, self_tests, examples, misc_files, linked_files, compression);
  auto report = WithoutGil([&] { return Pack(d, output); });
  return manifest::ToHex(Unwrap(std::move(report)).manifest_hash);
}

}  // namespace

void BindCartons(py::module_& m) {
  m.def("get_model_info", &GetModelInfo, py::arg("path_or_url"),
        "carton.toml, MANIFEST hash, files and tensor index of a carton (a path or a URL).");
  m.def("manifest_hash", &ManifestHashOf, py::arg("path_or_url"),
        "The manifest hash (sha256 of MANIFEST) as 64 hex digits.");
  m.def("verify", &VerifyCarton, py::arg("path_or_url"), py::arg("fetch_links") = false,
        py::arg("allow_file_links") = false,
        "Every problem of a carton, as `carton verify --json`.");
  m.def("pack", &PackModel, py::arg("path"), py::arg("output"), py::arg("config"),
        py::arg("self_tests"), py::arg("examples"), py::arg("misc_files"), py::arg("linked_files"),
        py::arg("compression"),
        "Packs a model directory or file into a carton; returns the manifest hash.");
  m.def("shrink", &ShrinkCarton, py::arg("path"), py::arg("output"), py::arg("urls"),
        "Writes a copy of a carton whose files named by sha256 in `urls` are linked; returns "
        "the manifest hash.");
}

}  // namespace carton::python
