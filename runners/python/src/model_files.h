// Private: a model/ folder in which Python code finds every file by name.
//
// The loader leaves large stored model/**/*.safetensors files out of the
// cache entry's model/ folder (they are zero-copy views of the .carton,
// loader/FORMAT.md "Cache"), but Python code opens its files by name. When
// such files are missing, the runner builds once per machine a mirror of
// model/ at <cache>/python/models/<manifest hash>/: symbolic links to every
// file and folder of the entry's model/, and real copies of the missing
// safetensors files (written from the loader's mapping, so from bytes that
// were checked against MANIFEST). Like the package folders, the mirror is
// written under a temporary name beside its place and renamed into it;
// when another process got there first its mirror is kept.
#pragma once

#include <string>

#include "carton/common/status.h"
#include "carton/loader/loader.h"

namespace carton::python_runner {

// The folder to give Python as model/: `model_dir` itself when every model
// file of `carton` is a file there (or `carton` is null), else the mirror
// (built if needed). Errors: kIoError; kNotFound when files are missing
// and `cache_root` is empty; kInternal when files are missing from a
// carton without a manifest hash.
Result<std::string> PythonModelDir(const std::string& model_dir, const loader::LoadedCarton* carton,
                                   const std::string& cache_root);

}  // namespace carton::python_runner
