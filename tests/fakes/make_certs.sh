#!/bin/sh
# make_certs.sh DIR — test certificates for the HTTPS fakes, written into DIR.
#
#   ca.pem / ca.key                   the test CA
#   server.pem / server.key           CN localhost, SAN DNS:localhost, IP:127.0.0.1, IP:::1 (by ca)
#   nomad.pem / nomad.key             SAN DNS:server.global.nomad only (by ca)
#   expired.pem / expired.key         SAN localhost + 127.0.0.1, valid 2020-01-01..2020-01-02 (by ca)
#   wrong-ca.pem / wrong-ca.key       an unrelated CA
#   wrong-server.pem / wrong-server.key  localhost + 127.0.0.1, signed by the wrong CA
#   client.pem / client.key           a client certificate (extendedKeyUsage clientAuth, by ca)
#
# EC P-256 keys throughout; a few tenths of a second. Needs only the openssl CLI.
set -eu

dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# ca NAME SUBJECT: a self-signed CA
ca() {
    key "$1.key"
    openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "$2" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$1.pem"
}

# leaf NAME CA SUBJECT EXTENSIONS: a certificate signed by CA, valid for a year
leaf() {
    key "$1.key"
    openssl req -new -key "$1.key" -subj "$3" -out "$1.csr"
    printf '%s\n' "$4" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
        -sha256 -days 365 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}

server_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1'

ca ca "/CN=gpuledger test CA"
ca wrong-ca "/CN=gpuledger unrelated CA"

leaf server ca "/CN=localhost" "$server_ext"
leaf wrong-server wrong-ca "/CN=localhost" "$server_ext"
leaf nomad ca "/CN=server.global.nomad" 'basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:server.global.nomad'
leaf client ca "/CN=gpuledger client" 'basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth'

# An expired server certificate: `openssl x509 -req` in OpenSSL 3.0 cannot
# back-date, `openssl ca` can (-startdate/-enddate).
key expired.key
openssl req -new -key expired.key -subj "/CN=localhost" -out expired.csr
mkdir -p ca-db
: > ca-db/index.txt
echo 1000 > ca-db/serial
cat > ca-db/openssl.cnf <<CNF
[ ca ]
default_ca = test_ca
[ test_ca ]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[ any ]
commonName = supplied
[ server_ext ]
$(printf '%s\n' "$server_ext")
CNF
openssl ca -batch -notext -config ca-db/openssl.cnf -cert ca.pem -keyfile ca.key \
    -startdate 20200101000000Z -enddate 20200102000000Z -extensions server_ext \
    -in expired.csr -out expired.pem 2>/dev/null
rm -rf ca-db expired.csr ca.srl wrong-ca.srl

# Be sure the expired one really is.
if openssl x509 -in expired.pem -noout -checkend 0 >/dev/null; then
    echo "make_certs.sh: expired.pem is not expired" >&2
    exit 1
fi
