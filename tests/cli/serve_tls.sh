#!/usr/bin/env bash
# serve and fleet serve behind TLS and a password, as the Prometheus
# exporters are: --web.config.file in exporter-toolkit's format. Real curl
# over https with the test CA and basic authentication (right, wrong and
# no password: 401 with WWW-Authenticate and the security headers), plain
# HTTP refused, fleet reading the node over https (--fleet-ca-cert,
# --fleet-basic-auth-file), fleet serve with a password, a real Prometheus scraping
# over TLS with basic auth, and each key gpuledger does not apply refused
# by name (exit 2).
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/prometheus.sh disable=SC1091
. "$(dirname "$0")/../lib/prometheus.sh"
err="" rc=0 # what run leaves (and $out)
unset GPULEDGER_RULES GPULEDGER_SCRIPTS

CERTS=$WORK/certs
sh "$FAKES/make_certs.sh" "$CERTS" >/dev/null
PASSWORD='s3cret:with colon'
HASH=$(python3 -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' "$PASSWORD" 2>/dev/null)
case $HASH in
\$2b\$*) ;;
*) skip "serve behind TLS" "python3's crypt module cannot make a bcrypt hash here"; finish ;;
esac
mkdir "$WORK/no-rules"
WEB=$WORK/web.yml
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n' \
    "$CERTS/server.pem" "$CERTS/server.key" "$HASH" >"$WEB"

if ! start_listening tls serve --demo --listen 127.0.0.1:0 --interval 1s --rules "$WORK/no-rules" --web.config.file "$WEB"; then
    fail "serve with TLS starts" "$(cat "$SERVE_LOG")"
    finish
fi
HTTPS=https://localhost:${URL##*:}
wait_for "serve over TLS: the first refresh" 30 sh -c "curl -s --cacert '$CERTS/ca.pem' -u 'prometheus:$PASSWORD' '$HTTPS/healthz' | grep -q ok"
http GET "$HTTPS/metrics" --cacert "$CERTS/ca.pem" -u "prometheus:$PASSWORD"
expect_eq "https with the password: 200" "$status" 200
expect_in "https with the password: the metrics" "$body" "gpuledger_up"
expect_security_headers "https 200"
http GET "$HTTPS/metrics" --cacert "$CERTS/ca.pem" -u "prometheus:wrong"
expect_eq "a wrong password: 401" "$status" 401
expect_eq "a wrong password: WWW-Authenticate" "$(header www-authenticate)" 'Basic realm="gpuledger", charset="UTF-8"'
expect_security_headers "401"
expect_not_in "a wrong password: no metrics" "$body" "gpuledger_up"
http GET "$HTTPS/ledger" --cacert "$CERTS/ca.pem"
expect_eq "no password: 401" "$status" 401
http GET "$HTTPS/metrics" --cacert "$CERTS/ca.pem" -u "nobody:$PASSWORD"
expect_eq "an unknown user: 401" "$status" 401
http GET "$HTTPS/metrics" --cacert "$CERTS/wrong-ca.pem" -u "prometheus:$PASSWORD"
expect_eq "a client that trusts another CA: no answer" "$status" 000
http GET "http://localhost:${URL##*:}/metrics" -u "prometheus:$PASSWORD"
expect_eq "plain HTTP on the TLS port: no answer" "$status" 000
expect_not_in "the password is never in the log" "$(cat "$SERVE_LOG")" "$PASSWORD"

# --- a real Prometheus scraping over TLS with basic auth ------------------------
if need_prometheus; then
    printf '%s' "$PASSWORD" >"$WORK/prom-password"
    PROM_SCRAPE_EXTRA="    scheme: https
    tls_config:
      ca_file: $CERTS/ca.pem
    basic_auth:
      username: prometheus
      password_file: $WORK/prom-password"
    start_prometheus "" "localhost:${URL##*:}"
    prom_has "Prometheus scrapes serve over TLS with basic auth" 60 'up{job="gpuledger"}' \
        '#j.data.result == 1 and j.data.result[1].value[2] == "1"'
    prom_has "Prometheus has the node's series" 30 'gpuledger_up' '#j.data.result == 1'
    PROM_SCRAPE_EXTRA=""
fi
# --- fleet reads the node over https with the CA and the password ----------------
printf 'prometheus:%s\n' "$PASSWORD" >"$WORK/fleet-auth"
run fleet ls --json --targets "$HTTPS" --fleet-ca-cert "$CERTS/ca.pem" --fleet-basic-auth-file "$WORK/fleet-auth"
expect_lua "fleet ls over https with the password: the node is read" "$out" 'local n = j.summary.nodes[1]; return n.gpus == 5 and n.error == nil'
printf 'prometheus:wrong\n' >"$WORK/fleet-wrong"
run fleet ls --json --targets "$HTTPS" --fleet-ca-cert "$CERTS/ca.pem" --fleet-basic-auth-file "$WORK/fleet-wrong"
expect_lua "fleet ls with a wrong password: unreachable, 401 named" "$out" 'local n = j.summary.nodes[1]; return n.unreachable == 1 and n.error:find("HTTP 401", 1, true) ~= nil'
run fleet ls --json --targets "$HTTPS" --fleet-basic-auth-file "$WORK/fleet-auth"
expect_lua "fleet ls without the CA: unreachable, the certificate named" "$out" 'local n = j.summary.nodes[1]; return n.unreachable == 1 and n.error:find("certificate", 1, true) ~= nil'
expect_not_in "fleet ls: the password is never printed" "$out$err" "$PASSWORD"
printf 'no colon here\n' >"$WORK/fleet-bad"
run fleet ls --targets "$HTTPS" --fleet-basic-auth-file "$WORK/fleet-bad"
expect_rc "a basic auth file without user:password: exit 2" 2
expect_in "a basic auth file without user:password: says so" "$err" "want one line, user:password"

stop_serve TERM
expect_eq "serve with TLS: SIGTERM, exit 0" "$SERVE_RC" 0
expect_clean_log "serve with TLS" "$SERVE_LOG"

# --- fleet serve with a password (plain HTTP) ------------------------------------
printf 'basic_auth_users:\n  ops: %s\n' "$HASH" >"$WORK/fleet-web.yml"
if start_serving fleet fleet serve --targets 127.0.0.9:1 --listen 127.0.0.1:0 --interval 1s \
    --rules "$WORK/no-rules" --web.config.file "$WORK/fleet-web.yml"; then
    http GET "$URL/fleet" -u "ops:$PASSWORD"
    expect_eq "fleet serve with the password: 200" "$status" 200
    http GET "$URL/fleet"
    expect_eq "fleet serve without it: 401" "$status" 401
    stop_serve TERM
else
    fail "fleet serve with a password starts" "$(cat "$SERVE_LOG")"
fi

# --- what gpuledger does not apply is refused, by name ---------------------------
printf 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n' >"$WORK/bad.yml"
run serve --demo --listen 127.0.0.1:0 --web.config.file "$WORK/bad.yml"
expect_rc "an unknown key: exit 2" 2
expect_in "an unknown key: named" "$err" "line 4: tls_server_config.client_auth_type: not a key gpuledger knows"
printf 'basic_auth_users:\n  p: plaintext\n' >"$WORK/bad.yml"
run fleet serve --targets 127.0.0.9:1 --listen 127.0.0.1:0 --web.config.file "$WORK/bad.yml"
expect_rc "a password that is no bcrypt hash: exit 2" 2
expect_in "a password that is no bcrypt hash: says so" "$err" "basic_auth_users.p: want a bcrypt hash"
expect_not_in "a password that is no bcrypt hash: not printed" "$err" "plaintext"
run serve --demo --listen 127.0.0.1:0 --web.config.file "$WORK/none.yml"
expect_rc "no such file: exit 2" 2
expect_in "no such file: named" "$err" "--web.config.file $WORK/none.yml: "
finish
