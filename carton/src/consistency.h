// Private: the checks that tie carton.toml, tensor_data/index.toml and the
// files together, shared by Verify() (over a zip) and Pack() (over a
// folder, before it writes a byte), so that pack refuses exactly what
// verify refuses, in the same words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "carton/carton/verify.h"
#include "carton/common/status.h"
#include "carton/format/config.h"
#include "carton/format/tensor_data.h"

namespace carton::internal {

// The files of a carton, by entry name, wherever they are.
class CartonFiles {
 public:
  virtual ~CartonFiles() = default;
  // A file of the carton: held here, or linked (LINKS).
  virtual bool Present(const std::string& path) const = 0;
  // The size of a file held here; nullopt when it is absent or only linked.
  virtual std::optional<std::uint64_t> Size(const std::string& path) const = 0;
  // The bytes of a file held here, refused beyond `limit` bytes.
  virtual Result<std::string> ReadText(const std::string& path, std::uint64_t limit) const = 0;
  // Whether a file held here lies under tensor_data/ (index.toml excluded).
  virtual bool HasTensorFiles() const = 0;
};

// tensor_data/: index.toml is there when other files are, parses, and each
// tensor it lists is there with the size its dtype and shape need (string
// tensors decode). Appends one problem per broken rule; returns the index
// when it could be read.
std::optional<TensorDataIndex> CheckTensorData(const CartonFiles& files,
                                               const TensorDataLimits& limits,
                                               std::vector<VerifyProblem>* problems);

// carton.toml against the rest: every @tensor_data/ reference names a
// tensor of the index, every @misc/ reference a file, and the tensor names
// of self-tests and examples are declared inputs and outputs (when any are
// declared), and self-test tensors match their declarations
// (CheckSelfTestTensors). Self-tests and examples are numbered from 1; `where` is
// "carton.toml:LINE:COL" where `details` knows the table's place.
void CheckReferences(const CartonConfig& config, const ConfigParseDetails& details,
                     const std::optional<TensorDataIndex>& index, const CartonFiles& files,
                     std::vector<VerifyProblem>* problems);

// The tensors each [[self_test]] references against the declared inputs
// and outputs they name (when any are declared): dtype, rank, fixed
// dimensions, and symbols resolving to one value across the self-test's
// inputs and outputs. `where[i]` places the i-th self-test. Names that are
// undeclared and references that resolve to nothing are left to
// CheckReferences, which calls this. Appends one problem per tensor:
// `self_test "echo": input "x": dtype int32, but [[input]] "x" is float32`.
void CheckSelfTestTensors(const CartonConfig& config, const std::vector<std::string>& where,
                          const TensorDataIndex& index, std::vector<VerifyProblem>* problems);

}  // namespace carton::internal
