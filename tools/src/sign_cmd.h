// Private to tools/src: the signature parts of verify and info
// (sign_cmd.cc), beside keygen and sign (commands.h).
#pragma once

#include <string>

#include "carton/carton/location.h"
#include "carton/carton/source.h"
#include "carton/common/status.h"
#include "carton/sign/verify.h"
#include "commands.h"
#include "json_out.h"

namespace carton::cli {

// --key, --ca and --identity as trusted signers. Errors: those of reading
// the key and certificate files.
Result<sign::TrustedSigners> TrustedFromArgs(const VerifyArgs& a);

// verify's signature check of the carton `carton` reads, verified already
// through it (`ok_details`: what its "ok" line says; "" when it is bad):
// prints "MODEL: ok (<ok_details>; signed by ...)" on stdout when both hold
// (not with --json), the failure on stderr, and sets (*doc)["signature"]
// and (*doc)["ok"]. Returns the exit code.
int CheckSignatureOf(const VerifyArgs& a, CartonSource& carton, const sign::TrustedSigners& trusted,
                     const std::string& ok_details, Json* doc);

// verify of a directory with keys or roots: any folder of files, every
// file hashed against its signature. Appends its document to `results`.
int VerifyDirectorySignature(const VerifyArgs& a, CartonSource& directory,
                             const sign::TrustedSigners& trusted, Json* results);

// info: the signature `carton` keeps (unchecked: who it claims signed), as
// a line on stdout (`print`) and as (*doc)["signature"] (null when none).
void AddSignatureInfo(CartonSource& carton, const manifest::Digest& manifest_hash, bool print,
                      Json* doc);

}  // namespace carton::cli
