#include "environment_args.h"

#include "carton/loader/environment.h"

namespace carton::cli {

Result<Environment> CommandEnvironment(const EnvironmentArgs& args, bool quiet) {
  CARTON_ASSIGN_OR_RETURN(Environment env, loader::DefaultEnvironment());
  env.registry_config = args.registry_config;
  env.plain_http = args.plain_http;
  env.jobs = args.jobs;
  env.threads = args.threads;
  env.network.allow_file_links = args.allow_file_links;
  if (quiet) env.network.show_progress = false;
  return env;
}

Result<std::unique_ptr<CartonSource>> CommandSource(const std::string& model,
                                                    const Environment& env,
                                                    std::string_view operation,
                                                    const ProgressFn& progress) {
  SourceOptions options;
  options.operation = std::string(operation);
  options.progress = progress;
  return OpenSource(model, env, options);
}

}  // namespace carton::cli
