// carton_pack: carton/pack.h with the options `carton pack` takes, and the
// describing fields for a path without carton.toml.
#include <cstring>
#include <string>

#include "errors.h"
#include "handles.h"
#include "hash_out.h"

extern "C" {

carton_status carton_pack_options_new(carton_pack_options** out) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(out, fn, "out"));
    *out = capi::NewHandle<carton_pack_options>();
    return Status::Ok();
  });
}

void carton_pack_options_free(carton_pack_options* options) { carton::capi::FreeHandle(options); }

carton_status carton_pack_options_set_compression(carton_pack_options* options,
                                                  const char* compression) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    CARTON_RETURN_IF_ERROR(capi::Require(compression, fn, "compression"));
    auto parsed = ParsePackCompression(compression);
    if (!parsed.ok()) return parsed.status().WithContext(std::string(fn) + ": compression");
    options->options.compression = *parsed;
    return Status::Ok();
  });
}

carton_status carton_pack_options_set_level(carton_pack_options* options, int level) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    options->options.level = level;
    return Status::Ok();
  });
}

carton_status carton_pack_options_set_threads(carton_pack_options* options, unsigned threads) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    options->options.threads = threads;
    return Status::Ok();
  });
}

carton_status carton_pack_options_set_runner(carton_pack_options* options, const char* runner_name,
                                             const char* required_framework_version) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    CARTON_RETURN_IF_ERROR(capi::Require(options, fn, "options"));
    CARTON_RETURN_IF_ERROR(capi::Require(runner_name, fn, "runner_name"));
    CARTON_RETURN_IF_ERROR(
        capi::Require(required_framework_version, fn, "required_framework_version"));
    // As `carton pack --runner --framework-version` describes a model.
    CartonConfig config;
    config.runner.runner_name = runner_name;
    config.runner.required_framework_version = required_framework_version;
    config.runner.runner_compat_version = kDefaultRunnerCompatVersion;
    if (Status valid = ValidateConfig(config); !valid.ok()) {
      return InvalidArgument(std::string(fn) + ": " + valid.message());
    }
    options->config = std::move(config);
    return Status::Ok();
  });
}

carton_status carton_pack(const char* path, const char* output, const carton_pack_options* options,
                          char manifest_hash[CARTON_HASH_HEX_SIZE]) {
  using namespace carton;
  return capi::Guard(__func__, [&](const char* fn) -> Status {
    if (manifest_hash != nullptr) manifest_hash[0] = '\0';
    CARTON_RETURN_IF_ERROR(capi::Require(path, fn, "path"));
    CARTON_RETURN_IF_ERROR(capi::Require(output, fn, "output"));
    PackDescription description;
    description.path = path;
    if (options != nullptr) {
      description.options = options->options;
      description.config = options->config;
      description.config_use = PackConfigUse::kIfMissing;
    }
    CARTON_ASSIGN_OR_RETURN(PackReport report, Pack(description, output));
    capi::WriteHash(report.manifest_hash, manifest_hash);
    return Status::Ok();
  });
}

}  // extern "C"
