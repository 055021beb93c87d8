#!/usr/bin/env bash
# The release: runs scripts/release (about 2 minutes on 2 cores the first
# time: it downloads Debian's source packages of Lua, lua-cjson, mbedTLS,
# curl, libmicrohttpd and musl and builds them with musl in build-release/;
# a rerun reuses them), then checks what it made in dist/: a statically
# linked binary named for its version, sha256sum checksums that verify, and
# the tarball's contents. Then runs that binary in an empty root holding
# nothing but it and its test inputs (chroot): check --demo (the same
# findings as the build under test), serve --demo answering from outside the
# root, serve with basic_auth_users checking bcrypt passwords (musl's
# crypt), an HTTPS request to the fake Nomad verified with --nomad-ca-cert (and refused
# with the wrong CA), and a site rule given as bytecode refused (the default
# rules are embedded as bytecode; site files are text only). Needs root;
# exits 77 when the source packages cannot be downloaded.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

if [ "$(id -u)" -ne 0 ]; then
    echo "skip: scripts/release installs with apt-get, and the empty root needs chroot: both need root"
    exit 77
fi
if [ ! -f "$SRC/build-release/prefix/.built" ]; then
    "$SRC/scripts/debian-sources" deb-src >"$WORK/sources.list" || exit 1
    read -r _ mirror suite _ <"$WORK/sources.list"
    if ! curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$suite/InRelease" 2>"$WORK/curl.err"; then
        echo "skip: the Debian mirror $mirror (for the source packages) cannot be reached: $(cat "$WORK/curl.err")"
        exit 77
    fi
fi

echo "scripts/release (the libraries are built once in build-release/)"
binary=$(cd "$SRC" && scripts/release 2>"$WORK/release.err" | tail -n 1)
if [ -z "$binary" ] || [ ! -f "$SRC/$binary" ]; then
    fail "scripts/release builds the binary" "$(tail -n 20 "$WORK/release.err")"
    finish
fi
name=$(basename "$binary")
binary=$SRC/$binary
version=$("$GPULEDGER" version)
expect_eq "the binary is named for the version" "$name" "gpuledger-v${version#gpuledger }-linux-amd64"
expect_in "file: statically linked" "$(file -b "$binary")" "statically linked"
expect_in "file: stripped" "$(file -b "$binary")" ", stripped"
expect_in "ldd finds nothing to load" "$(ldd "$binary" 2>&1)" "not a dynamic executable"
# It has no TLS (its libmicrohttpd is built without GnuTLS): a web
# configuration asking for it is refused. Its basic authentication is
# musl's own crypt (checked in the empty root below).
printf 'tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent.key\n' >"$WORK/tls.yml"
said=$("$binary" serve --demo --listen 127.0.0.1:0 --web.config.file "$WORK/tls.yml" 2>&1)
expect_eq "the static binary refuses tls_server_config: exit 2" "$?" 2
expect_in "... saying it cannot speak TLS" "$said" "cannot speak TLS"
checksums=$SRC/dist/gpuledger-v${version#gpuledger }-checksums.txt
expect_eq "the checksums verify (sha256sum -c)" \
    "$(cd "$SRC/dist" && sha256sum -c "$checksums" 2>&1)" "$name: OK
$name.tar.gz: OK"
# The README's install commands, as written, in a copy of this release's
# files: /usr/local/bin is a private tmpfs for them (a mount namespace of
# their own), so the machine's own is left alone.
mkdir "$WORK/dist"
cp "$binary" "$binary.tar.gz" "$checksums" "$WORK/dist/"
if readme_block "static_release.sh runs this block" >"$WORK/readme-release.sh"; then
    # shellcheck disable=SC2016 # $1 is the inner shell's
    said=$(cd "$WORK/dist" && unshare --mount sh -c 'mount -t tmpfs tmpfs /usr/local/bin && bash -e "$1"' _ \
        "$WORK/readme-release.sh" 2>&1)
    expect_eq "the README's install commands, as written, verify, install and run it" "$said" "$name: OK
$name.tar.gz: OK
$version"
else
    fail "README.md has the release binary's install commands, marked for this test"
fi
contents=$(tar -tzf "$SRC/dist/$name.tar.gz")
for file in gpuledger README.md LICENSE CHANGELOG.md deploy/nomad/gpuledger.nomad.hcl \
    deploy/nomad/gpuledger.policy.hcl deploy/systemd/gpuledger.service rules/examples/thresholds.lua; do
    expect_in "the tarball holds $file" "$contents" "$name/$file"
done
expect_eq "the tarball's binary is the release binary" \
    "$(tar -xOzf "$SRC/dist/$name.tar.gz" "$name/gpuledger" | sha256sum)" "$(sha256sum <"$binary")"

# --- in an empty root ----------------------------------------------------------------------------
root=$WORK/root
mkdir -p "$root/certs" "$root/site-rules"
cp "$binary" "$root/gpuledger"
CERTS=$WORK/certs
if ! sh "$FAKES/make_certs.sh" "$CERTS" 2>"$WORK/certs.err"; then
    fail "make_certs.sh" "$(cat "$WORK/certs.err")"
    finish
fi
cp "$CERTS/ca.pem" "$CERTS/wrong-ca.pem" "$root/certs/"
luac5.4 -o "$root/site-rules/compiled.lua" "$SRC/rules/examples/memory_nearly_full.lua"
echo "the empty root: $(cd "$root" && find . -type f | sort | tr '\n' ' ')"
# The binary in the root, for run and start_serve.
cat >"$WORK/in-root" <<EOF
#!/bin/sh
exec "$(command -v chroot)" "$root" /gpuledger "\$@"
EOF
chmod +x "$WORK/in-root"
build_under_test=$GPULEDGER
GPULEDGER=$WORK/in-root

run version
expect_eq "version in the empty root" "$out" "$version"
run check --demo
want=$("$build_under_test" check --demo 2>/dev/null)
expect_rc "check --demo exits 0 in the empty root" 0
expect_eq "check --demo: the findings of the build under test" "$out" "$want"
expect_no_crash "check --demo"

if start_serve serve --demo --listen 127.0.0.1:0 --interval 1s; then
    pass "serve --demo starts in the empty root"
    http GET "$URL/healthz"
    expect_eq "serve: /healthz answers 200 outside the root" "$status" 200
    http GET "$URL/metrics"
    expect_in "serve: /metrics has the demo node's GPUs" "$body" 'gpuledger_gpu_'
    stop_serve TERM
    expect_eq "serve exits 0 on SIGTERM" "$SERVE_RC" 0
else
    fail "serve --demo starts in the empty root" "$(cat "$SERVE_LOG")"
fi

# Basic authentication with musl's bcrypt: a user for each of the bcrypt
# prefixes exporter-toolkit's hashes come with ($2a$, $2b$, $2y$: the same
# algorithm for a password of ASCII text, so one hash made by Python's crypt
# serves as each), a wrong password, an unknown user, no password, and a
# password that is no bcrypt hash refused at start.
password='s3cret:static'
hash=$(python3 -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' \
    "$password" 2>/dev/null)
case $hash in
\$2b\$*)
    # shellcheck disable=SC2016 # bcrypt prefixes, not expansions
    printf 'basic_auth_users:\n  a: $2a$%s\n  b: %s\n  y: $2y$%s\n' "${hash#\$2b\$}" "$hash" "${hash#\$2b\$}" \
        >"$root/auth.yml"
    if start_listening auth serve --demo --listen 127.0.0.1:0 --interval 1s --web.config.file /auth.yml; then
        pass "serve with basic_auth_users starts in the empty root"
        wait_for "serve with basic auth: the first refresh" 30 \
            sh -c "curl -s -u 'b:$password' '$URL/healthz' | grep -q ok"
        for user in a b y; do
            http GET "$URL/metrics" -u "$user:$password"
            expect_eq "basic auth, the \$2$user\$ hash and its password: 200" "$status" 200
            expect_in "basic auth, the \$2$user\$ hash: the metrics" "$body" "gpuledger_up"
        done
        http GET "$URL/metrics" -u "b:wrong"
        expect_eq "basic auth, a wrong password: 401" "$status" 401
        expect_not_in "basic auth, a wrong password: no metrics" "$body" "gpuledger_up"
        http GET "$URL/metrics" -u "nobody:$password"
        expect_eq "basic auth, an unknown user: 401" "$status" 401
        http GET "$URL/ledger"
        expect_eq "basic auth, no password: 401" "$status" 401
        expect_eq "basic auth, no password: WWW-Authenticate" "$(header www-authenticate)" \
            'Basic realm="gpuledger", charset="UTF-8"'
        stop_serve TERM
        expect_eq "serve with basic auth exits 0 on SIGTERM" "$SERVE_RC" 0
        expect_not_in "the password is never in its log" "$(cat "$SERVE_LOG")" "$password"
    else
        fail "serve with basic_auth_users starts in the empty root" "$(cat "$SERVE_LOG")"
    fi
    printf 'basic_auth_users:\n  p: plaintext\n' >"$root/plain.yml"
    run serve --demo --listen 127.0.0.1:0 --web.config.file /plain.yml
    expect_rc "basic auth, a password that is no bcrypt hash: exit 2" 2
    expect_in "... saying so" "$err" "basic_auth_users.p: want a bcrypt hash"
    ;;
*) skip "basic auth in the static binary" "python3's crypt module cannot make a bcrypt hash here" ;;
esac

# HTTPS to the fake Nomad: snapshot reads it (there is no nvidia-smi in the
# root). Its certificate names localhost and 127.0.0.1; the release's mbedTLS
# 2.28 matches host names only, not IP addresses (README, "Compatibility"):
# the address is localhost, or 127.0.0.1 with --nomad-tls-server-name.
if fake_nomad_start "$TESTDATA/nomad/nomad-node.json" --max-seconds 60 \
    --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key"; then
    token=c1a5e7f0-2b4d-4c68-8e9a-0b1c2d3e4f50
    # snapshot_nomad ADDRESS ARGS...: snapshot of Nomad at ADDRESS in the root, leaving $out, $err.
    snapshot_nomad() {
        local address=$1
        shift
        out=$(MY_TOKEN=$token "$WORK/in-root" snapshot --no-docker --nvidia-smi /absent --nomad-addr "$address" \
            --nomad-token-env MY_TOKEN "$@" 2>"$WORK/stderr")
        err=$(cat "$WORK/stderr")
        printf '%s\n%s\n' "$out" "$err" >>"$WORK/all-output"
    }
    read_ok='local n = j.sources.nomad return n.error == nil and #n.allocations > 0'
    snapshot_nomad "https://localhost:$nomad_port" --nomad-ca-cert /certs/ca.pem
    expect_lua "HTTPS to localhost with --nomad-ca-cert: Nomad's allocations read" "$out" "$read_ok"
    snapshot_nomad "https://127.0.0.1:$nomad_port" --nomad-ca-cert /certs/ca.pem --nomad-tls-server-name localhost
    expect_lua "HTTPS to 127.0.0.1 with --nomad-tls-server-name localhost: read" "$out" "$read_ok"
    snapshot_nomad "https://localhost:$nomad_port" --nomad-ca-cert /certs/wrong-ca.pem
    expect_lua "HTTPS with the wrong CA: refused, said why" "$out" \
        'local e = j.sources.nomad.error return e ~= nil and (e:lower():find("certificate", 1, true) or e:lower():find("verify", 1, true)) ~= nil'
    expect_not_in "the token is in no output" "$(cat "$WORK/all-output")" "$token"
else
    fail "fake Nomad starts" "$(tail -n 5 "$WORK/nomad.stderr")"
fi

run rules --check /site-rules
expect_rc "a site rule given as bytecode: rules --check fails" 1
expect_in "... saying it is not text" "$out$err" "binary chunk"
finish
