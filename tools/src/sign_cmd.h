// Private to tools/src: the signature parts of verify and info
// (sign_cmd.cc), beside keygen and sign (commands.h).
#pragma once

#include <string>

#include "carton/carton/location.h"
#include "carton/common/status.h"
#include "carton/sign/verify.h"
#include "commands.h"
#include "json_out.h"

namespace carton::cli {

// --key, --ca and --identity as trusted signers. Errors: those of reading
// the key and certificate files.
Result<sign::TrustedSigners> TrustedFromArgs(const VerifyArgs& a);

// verify's signature check of `model`, whose carton is read at `where` (a
// local copy of a URL or an oci:// reference) and verified already
// (`ok_details`: what its "ok" line says; "" when it is bad): prints
// "MODEL: ok (<ok_details>; signed by ...)" on stdout when both hold (not
// with --json), the failure on stderr, and sets (*doc)["signature"] and
// (*doc)["ok"]. Returns the exit code.
int CheckSignatureOf(const VerifyArgs& a, const std::string& model, const Location& where,
                     const sign::TrustedSigners& trusted, const std::string& ok_details, Json* doc);

// verify of a directory with keys or roots: any folder of files, every
// file hashed against its signature. Appends its document to `results`.
int VerifyDirectorySignature(const VerifyArgs& a, const std::string& model,
                             const sign::TrustedSigners& trusted, Json* results);

// info: the signature beside the carton file `model` (unchecked), as a
// line on stdout (`print`) and as (*doc)["signature"] (null when none).
void AddSignatureInfo(const std::string& model, bool print, Json* doc);

}  // namespace carton::cli
