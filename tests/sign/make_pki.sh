#!/usr/bin/env bash
# make_pki.sh DIR: the keys and certificates the sign tests use, made with
# the openssl CLI at test time (nothing secret is kept in the repository).
#   p256|p384|p521.{key,pub}   key pairs (private keys mode 0600)
#   root.{key,pem}             a self-signed CA (P-256)
#   int.{key,pem}              an intermediate CA signed by root
#   leaf.{key,pem}             code signing (KU digitalSignature, EKU codeSigning,
#                              SAN email release@example.com), signed by int
#   leaf384.{key,pem}          the same on P-384
#   server.{key,pem}           a TLS server certificate (EKU serverAuth) signed by int
#   expired.{key,pem}          code signing, valid 2020-01-01 to 2020-01-02 only
#   other-root.{key,pem}       an unrelated self-signed CA
#   loop-x.pem, loop-y.pem     two CAs that issue each other; loop-leaf.{key,pem}
#                              issued by loop-x
set -euo pipefail
cd "$1"
ossl() { openssl "$@" 2>/dev/null; }

pair() {  # NAME CURVE
  ossl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:$2" -out "$1.key"
  chmod 600 "$1.key"
  ossl pkey -in "$1.key" -pubout -out "$1.pub"
}

ext() {  # FILE LINES...: an extensions section [v3]
  local f=$1
  shift
  printf '%s\n' "[v3]" "$@" >"$f"
}

selfsigned() {  # NAME CN
  pair "$1" P-256
  ossl req -new -x509 -key "$1.key" -subj "/CN=$2" -days 3650 -sha256 -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

issue() {  # NAME CURVE CN ISSUER EXTLINES...
  local name=$1 curve=$2 cn=$3 issuer=$4
  shift 4
  pair "$name" "$curve"
  ext "$name.ext" "$@"
  ossl req -new -key "$name.key" -subj "/CN=$cn" -out "$name.csr"
  ossl x509 -req -in "$name.csr" -CA "$issuer.pem" -CAkey "$issuer.key" -set_serial "$RANDOM$RANDOM" \
    -days 365 -sha256 -extfile "$name.ext" -extensions v3 -out "$name.pem"
}

pair p256 P-256
pair p384 P-384
pair p521 P-521

selfsigned root root-ca
issue int P-256 intermediate-ca root "basicConstraints=critical,CA:TRUE" \
  "keyUsage=critical,keyCertSign,cRLSign"
issue leaf P-256 release int "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=codeSigning" "subjectAltName=email:release@example.com"
issue leaf384 P-384 release-384 int "basicConstraints=CA:FALSE" \
  "keyUsage=critical,digitalSignature" "extendedKeyUsage=codeSigning"
issue server P-256 server.example.com int "basicConstraints=CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
  "subjectAltName=DNS:server.example.com"
selfsigned other-root other-ca

# An expired leaf: `openssl ca` takes explicit dates.
mkdir -p ca-db
: >ca-db/index.txt
echo 1000 >ca-db/serial
cat >ca.cnf <<CNF
[ca]
default_ca = d
[d]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
certificate = int.pem
private_key = int.key
default_md = sha256
policy = p
unique_subject = no
[p]
commonName = supplied
[v3]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = codeSigning
CNF
pair expired P-256
ossl req -new -key expired.key -subj "/CN=expired" -out expired.csr
ossl ca -batch -config ca.cnf -extensions v3 -startdate 20200101000000Z -enddate 20200102000000Z \
  -in expired.csr -out expired.pem -notext

# Two CAs that issue each other: y0 (CN=loop-y, self-signed) issues x, x
# issues y (CN=loop-y, y0's key), so x names y as its issuer and y names x.
pair loop-y P-256
ossl req -new -x509 -key loop-y.key -subj "/CN=loop-y" -days 365 -out loop-y0.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
cp loop-y.key loop-y0.key
issue loop-x P-256 loop-x loop-y0 "basicConstraints=critical,CA:TRUE" "keyUsage=critical,keyCertSign"
ext loop-y.ext "basicConstraints=critical,CA:TRUE" "keyUsage=critical,keyCertSign"
ossl req -new -key loop-y.key -subj "/CN=loop-y" -out loop-y.csr
ossl x509 -req -in loop-y.csr -CA loop-x.pem -CAkey loop-x.key -set_serial 77 -days 365 \
  -extfile loop-y.ext -extensions v3 -out loop-y.pem
issue loop-leaf P-256 loop-leaf loop-x "basicConstraints=CA:FALSE" \
  "keyUsage=critical,digitalSignature" "extendedKeyUsage=codeSigning"
