#include "pack_cmd.h"

#include <filesystem>
#include <iostream>

#include "carton/common/atomic_file.h"
#include "describe_flags.h"
#include "exit_code.h"

namespace carton::cli {

Status DescribeForPack(const PackArgs& a, PackOptions* o) {
  o->exclude = a.exclude;
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string config_path = a.dir + "/carton.toml";
  const bool has_config = fs::is_directory(a.dir, ec) && fs::is_regular_file(config_path, ec);
  const std::string given = GivenDescribeFlags(a.describe);
  if (given.empty()) {
    if (a.override_config) {
      return InvalidArgument(
          "--override needs the flags to put over carton.toml (--runner, "
          "--framework-version, --name, ...)");
    }
    return Status::Ok();
  }
  if (!has_config) {
    CARTON_ASSIGN_OR_RETURN(o->config_if_missing, ConfigFromFlags(a.describe));
    return Status::Ok();
  }
  if (!a.override_config) {
    return InvalidArgument(config_path + " describes the model, so " + given +
                           " would be ignored; leave them out, or add --override to put them over "
                           "the file's values");
  }
  CARTON_ASSIGN_OR_RETURN(auto bytes, ReadFile(config_path));
  ConfigParseDetails details;
  CARTON_ASSIGN_OR_RETURN(CartonConfig c, ParseConfig(AsChars(bytes), config_path, {}, &details));
  for (const auto& w : details.warnings) std::cerr << "carton pack: warning: " << w << '\n';
  CARTON_RETURN_IF_ERROR(ApplyDescribeFlags(a.describe, &c));
  o->config_override = std::move(c);
  return Status::Ok();
}

void PrintPackNotes(const PackReport& report) {
  for (const auto& w : report.warnings) std::cerr << "carton pack: warning: " << w << '\n';
  if (!report.skipped_by_default.empty()) {
    std::cerr << "carton pack: note: left out";
    for (std::size_t i = 0; i < report.skipped_by_default.size(); ++i) {
      std::cerr << (i == 0 ? " " : ", ") << report.skipped_by_default[i];
    }
    std::cerr << " (.git/, __pycache__/ and .DS_Store are never packed)\n";
  }
}

}  // namespace carton::cli
