// Private to carton/src: the parts of signed cartons that unpack and the
// signature operations share (signature.cc, sign_carton.cc,
// signature_check.cc, unpack.cc).
#pragma once

#include <string>
#include <vector>

#include "carton/carton/source.h"
#include "carton/common/status.h"
#include "carton/manifest/manifest.h"
#include "carton/sign/bundle.h"

namespace carton::internal {

// MANIFEST's entries as resources, in MANIFEST's order: what a signed list
// is compared with (the comparison needs no order; SignedFiles sorts).
std::vector<sign::Resource> ManifestFiles(const manifest::Manifest& manifest);

// Who a bundle says signed it, unchecked: "key <hint>" (the hint of its
// rawBytes key when it has no hint), or the leaf certificate's subject.
std::string ClaimedSigner(const sign::Bundle& bundle);

// `signature` relative to `dir` when it lies inside it ("" otherwise), for
// the ignore list of a directory's check.
std::string RelativeInside(const std::string& signature, const std::string& dir);

// A kept signature parsed; errors name where it was.
Result<sign::Bundle> ParseKept(const KeptSignature& kept);

// Unpack: copies the signature `carton` keeps (CartonSource::Signature)
// into `dir`/model.sig when there is one that lists exactly `manifest`'s
// files; one that does not is left out with a Notice saying why. Errors:
// kIoError.
Status PlaceSignature(CartonSource& carton, const manifest::Manifest& manifest,
                      const std::string& dir);

}  // namespace carton::internal
