// node sigstore_verify.js BUNDLE PUBLIC-KEY.pem: verifies an OMS bundle of
// the key method with @sigstore/verify (offline: no transparency log, no
// timestamps), a Sigstore verifier independent of carton. Prints
// "verified <hint>" and exits 0, or prints the error and exits 1. The
// package is found through NODE_PATH.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const { bundleFromJSON } = require('@sigstore/bundle');
const { toSignedEntity, toTrustMaterial, Verifier } = require('@sigstore/verify');

const [bundlePath, keyPath] = process.argv.slice(2);
try {
  const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
  const pem = fs.readFileSync(keyPath);
  const hint = crypto.createHash('sha256').update(pem).digest('hex');
  const key = crypto.createPublicKey(pem);
  const root = { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] };
  const trust = toTrustMaterial(root, (wanted) => {
    if (wanted !== hint) throw new Error(`the bundle names key ${wanted}, not ${hint}`);
    return { publicKey: key, validFor: () => true };
  });
  const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
  verifier.verify(toSignedEntity(bundle));
  console.log(`verified ${hint}`);
} catch (e) {
  console.log(`not verified: ${e.message || e}`);
  process.exit(1);
}
