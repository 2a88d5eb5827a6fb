#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "carton/safetensors/file.h"
#include "commands.h"
#include "exit_code.h"

namespace carton::cli {
namespace {

using safetensors::File;

std::string Shape(std::span<const std::uint64_t> shape) {
  return safetensors::ShapeToString(shape);
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()));
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 2, ' ');
    }
    std::cout << line << '\n';
  }
}

nlohmann::ordered_json InspectJson(const File& f) {
  nlohmann::ordered_json j;
  j["file"] = f.source();
  j["header_size"] = f.header_size();
  j["data_start"] = f.data_start();
  j["file_size"] = f.bytes().size();
  j["metadata"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : f.metadata()) j["metadata"][k] = v;
  j["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : f.tensors()) {
    nlohmann::ordered_json e;
    e["name"] = std::string(t.name);
    e["dtype"] = std::string(safetensors::DtypeName(t.dtype));
    e["shape"] = std::vector<std::uint64_t>(t.shape.begin(), t.shape.end());
    e["bytes"] = t.data.size();
    e["data_offsets"] = {t.data_offset, t.data_offset + t.data.size()};
    j["tensors"].push_back(std::move(e));
  }
  return j;
}

}  // namespace

int SafetensorsInspect(const SafetensorsInspectArgs& args) {
  auto f = File::Open(args.file);
  if (!f.ok()) return Fail("safetensors inspect", f.status());
  if (args.json) {
    // Names and metadata were validated as UTF-8, so dump cannot throw.
    std::cout << InspectJson(*f).dump(2) << '\n';
    return kExitOk;
  }
  std::cout << f->source() << ": " << f->size() << " tensors, header " << f->header_size()
            << " bytes, data " << (f->bytes().size() - f->data_start()) << " bytes\n";
  if (f->has_metadata()) {
    std::cout << "metadata:\n";
    for (const auto& [k, v] : f->metadata()) std::cout << "  " << k << " = " << v << '\n';
  }
  std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "bytes", "offset"}};
  for (const auto& t : f->tensors()) {
    rows.push_back({std::string(t.name), std::string(safetensors::DtypeName(t.dtype)),
                    Shape(t.shape), std::to_string(t.data.size()), std::to_string(t.data_offset)});
  }
  PrintTable(rows);
  return kExitOk;
}

int SafetensorsVerify(const SafetensorsVerifyArgs& args) {
  int worst = kExitOk;
  nlohmann::ordered_json report = nlohmann::ordered_json::array();
  for (const auto& path : args.files) {
    auto f = File::Open(path);
    nlohmann::ordered_json entry;
    entry["file"] = path;
    if (f.ok()) {
      entry["valid"] = true;
      entry["tensors"] = f->size();
      if (!args.json && !args.quiet) std::cout << path << ": ok (" << f->size() << " tensors)\n";
    } else {
      int code = ExitCodeFor(f.status());
      worst = std::max(worst, code);
      entry["valid"] = false;
      entry["error"] = f.status().message();
      entry["code"] = std::string(StatusCodeName(f.status().code()));
      Fail("safetensors verify", f.status());
    }
    report.push_back(std::move(entry));
  }
  if (args.json) {
    std::cout << report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << '\n';
  }
  return worst;
}

}  // namespace carton::cli
