"""rebuild_pae.py BUNDLE OUT_DIR: writes OUT_DIR/pae.bin (the DSSE
pre-authentication encoding of the bundle's payload, built here from the
DSSE spec, not by carton) and OUT_DIR/sig.der (the signature), for
`openssl dgst -verify` to check."""
import base64
import json
import pathlib
import sys

bundle = json.loads(pathlib.Path(sys.argv[1]).read_text())
envelope = bundle["dsseEnvelope"]
payload = base64.b64decode(envelope["payload"])
kind = envelope["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
out = pathlib.Path(sys.argv[2])
(out / "pae.bin").write_bytes(pae)
(out / "sig.der").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
