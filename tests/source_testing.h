// Helpers for tests of the operations that read a carton through its source
// (carton/carton/source.h): what a shell does, in one call.
#pragma once

#include <catch2/catch.hpp>
#include <memory>

#include "carton/carton/source.h"

namespace carton::testing {

// The source of `location` with `env`; fails the test when it cannot be
// opened (a location that does not parse).
inline std::unique_ptr<CartonSource> SourceFor(const Location& location,
                                               const Environment& env = {},
                                               const SourceOptions& options = {}) {
  auto source = OpenSource(location, env, options);
  if (!source.ok()) FAIL("OpenSource(" << location.text() << "): " << source.status().message());
  return std::move(source).value();
}

// A reader of the .carton file at `path`, mapped; fails the test when it
// cannot be opened.
inline CartonReader OpenReader(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) FAIL("MappedFile::Open(" << path << "): " << file.status().message());
  auto reader = CartonReader::OpenFile(std::make_shared<const MappedFile>(std::move(file).value()));
  if (!reader.ok()) FAIL("CartonReader::OpenFile(" << path << "): " << reader.status().message());
  return std::move(reader).value();
}

}  // namespace carton::testing
