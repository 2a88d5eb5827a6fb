// Private: the built-in sources (source.h), made by OpenSource.
#pragma once

#include <memory>

#include "carton/carton/source.h"

namespace carton::internal {

// A .carton file at `path` (location.text() when empty): mapped once,
// MANIFEST read first with pread.
std::unique_ptr<CartonSource> MakeFileSource(const Location& location,
                                             const Environment& environment,
                                             const SourceOptions& options, std::string path = "");
// An http(s) URL: range requests, or downloaded whole into the cache.
std::unique_ptr<CartonSource> MakeUrlSource(const Location& location,
                                            const Environment& environment,
                                            const SourceOptions& options);
// A directory: refused by every operation but the loader's.
std::unique_ptr<CartonSource> MakeDirectorySource(const Location& location,
                                                  const Environment& environment,
                                                  const SourceOptions& options);

}  // namespace carton::internal
