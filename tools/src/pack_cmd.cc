#include "pack_cmd.h"

#include <filesystem>
#include <iostream>

#include "describe_flags.h"
#include "exit_code.h"

namespace carton::cli {

Status DescribeForPack(const PackArgs& a, PackDescription* d) {
  d->path = a.dir;
  d->options.exclude = a.exclude;
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
    CARTON_ASSIGN_OR_RETURN(d->config, ConfigFromFlags(a.describe));
    d->config_use = PackConfigUse::kIfMissing;
    return Status::Ok();
  }
  if (!a.override_config) {
    return InvalidArgument(config_path + " describes the model, so " + given +
                           " would be ignored; leave them out, or add --override to put them over "
                           "the file's values");
  }
  // Pack parses carton.toml (its warnings come back in the report) and
  // hands its values to the flags.
  d->edit_config = [describe = a.describe](CartonConfig* c) {
    return ApplyDescribeFlags(describe, c);
  };
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
