#!/usr/bin/env bash
# Test certificates for TLS listeners, made with openssl only, into DIR (default: certs/, which
# .gitignore keeps out of git; never commit what this writes).
#
#   scripts/make-certs.sh [DIR]
#
# Files (every .pem with a key holds it as unencrypted PKCS#8 first, then the certificate chain:
# Kafka's PEM keystore, ssl.keystore.type=PEM):
#   ca.pem, ca.key            the test CA; truststore.pem is ca.pem (ssl.truststore.location)
#   broker1.pem .. broker3.pem  broker keystores: CN=brokerN, subjectAltName localhost,
#                             127.0.0.1, ::1 and the compose host names (broker1..3, kafka-1..3,
#                             broker-1..3)
#   broker-encrypted.pem      broker1's key encrypted with the password "broker-secret"
#                             (ssl.key.password), then its chain
#   alice.pem bob.pem admin.pem broker.pem   client keystores, subject
#                             CN=<name>,OU=eng,O=acme,C=US (RFC 2253 order)
#   <name>.key, <name>.crt    the same key and certificate apart (librdkafka's ssl.key.location
#                             and ssl.certificate.location, kafka-python's ssl_keyfile/certfile)
#   expired.pem               CN=expired, signed by the CA, valid only in 2020
#   selfsigned.pem            CN=selfsigned, signed by itself
#   wrongca.pem, other-ca.pem CN=wrongca, signed by a second CA nobody trusts
#   not-yet-valid.pem         CN=future, signed by the CA, valid from 2099
set -euo pipefail

dir="${1:-certs}"
mkdir -p "$dir"
cd "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

days=3650
hosts="DNS:localhost,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
for n in 1 2 3; do
    hosts="$hosts,DNS:broker$n,DNS:kafka-$n,DNS:broker-$n"
done

new_key() {  # PKCS#8 RSA key (what Kafka's PEM keystore reads)
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null
}

make_ca() {  # NAME CN
    new_key "$1.key"
    openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "/O=minikafka-test/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem"
}

# sign NAME SUBJECT CA [SAN]: NAME.key, NAME.crt and the keystore NAME.pem
sign() {
    local name="$1" subject="$2" ca="$3" san="${4:-}"
    new_key "$name.key"
    openssl req -new -key "$name.key" -subj "$subject" -out "$work/$name.csr"
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=serverAuth,clientAuth"
        if [ -n "$san" ]; then echo "subjectAltName=$san"; fi
    } >"$work/$name.ext"
    openssl x509 -req -in "$work/$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
        -CAserial "$work/$ca.srl" -days "$days" -sha256 -extfile "$work/$name.ext" \
        -out "$name.crt" 2>/dev/null
    cat "$name.key" "$name.crt" "$ca.pem" >"$name.pem"
}

# sign_dated NAME SUBJECT START END: signed by the CA with given validity (openssl ca takes
# dates in the past, openssl x509 does not)
sign_dated() {
    local name="$1" subject="$2" start="$3" end="$4"
    new_key "$name.key"
    openssl req -new -key "$name.key" -subj "$subject" -out "$work/$name.csr"
    mkdir -p "$work/ca-db"
    : >"$work/ca-db/index.txt"
    cat >"$work/ca.cnf" <<EOF
[ca]
default_ca = test
[test]
database = $work/ca-db/index.txt
new_certs_dir = $work/ca-db
serial = $work/ca-db/serial
default_md = sha256
policy = any
unique_subject = no
x509_extensions = leaf
[any]
commonName = supplied
organizationName = optional
organizationalUnitName = optional
countryName = optional
[leaf]
basicConstraints = CA:FALSE
extendedKeyUsage = serverAuth,clientAuth
EOF
    openssl rand -hex 8 >"$work/ca-db/serial"
    openssl ca -batch -config "$work/ca.cnf" -cert ca.pem -keyfile ca.key \
        -startdate "$start" -enddate "$end" -in "$work/$name.csr" -out "$work/$name.full" \
        2>/dev/null
    openssl x509 -in "$work/$name.full" -out "$name.crt"
    cat "$name.key" "$name.crt" ca.pem >"$name.pem"
}

make_ca ca "minikafka test CA"
cp ca.pem truststore.pem
make_ca other-ca "another CA"

for n in 1 2 3; do
    sign "broker$n" "/C=US/O=acme/OU=brokers/CN=broker$n" ca "$hosts"
done
# ssl.key.password: the same certificate, its key encrypted (PKCS#8, AES-256)
openssl pkcs8 -topk8 -v2 aes-256-cbc -in broker1.key -passout pass:broker-secret \
    -out broker-encrypted.key
cat broker-encrypted.key broker1.crt ca.pem >broker-encrypted.pem

for user in alice bob admin broker; do
    sign "$user" "/C=US/O=acme/OU=eng/CN=$user" ca "DNS:localhost,IP:127.0.0.1"
done

sign_dated expired "/C=US/O=acme/OU=eng/CN=expired" 20200101000000Z 20201231000000Z
sign_dated not-yet-valid "/C=US/O=acme/OU=eng/CN=future" 20990101000000Z 20991231000000Z

new_key selfsigned.key
openssl req -x509 -new -key selfsigned.key -sha256 -days "$days" \
    -subj "/C=US/O=acme/OU=eng/CN=selfsigned" -addext "subjectAltName=$hosts" -out selfsigned.crt
cat selfsigned.key selfsigned.crt >selfsigned.pem

sign wrongca "/C=US/O=acme/OU=eng/CN=wrongca" other-ca "$hosts"

rm -f ./*.srl
chmod 600 ./*.key ./*.pem
echo "certificates in $(pwd)"
