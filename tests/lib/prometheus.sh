# shellcheck shell=bash disable=SC2034 # the variables set here are the callers'
# Shared by the tests with a real Prometheus (source it after testlib.sh and
# serve.sh): the skip when Prometheus cannot be had, one Prometheus on
# loopback scraping given targets every second (stopped when the script
# ends), and its instant queries.

# need_prometheus: returns 1 after a skip (with why) when Prometheus,
# promtool, curl or python3 cannot be had.
need_prometheus() {
    local program
    if ! need_program prometheus prometheus || ! need_program promtool prometheus; then
        skip "prometheus" "Debian's prometheus is not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
        return 1
    fi
    for program in curl python3; do
        command -v "$program" >/dev/null || { skip "prometheus" "$program is not installed"; return 1; }
    done
}

# start_prometheus [--federate] RULE_FILE TARGET...: starts a Prometheus with
# its own config and storage under $WORK, scraping each host:port TARGET
# every second (job "gpuledger"; with --federate, TARGET is another
# Prometheus and its gpuledger_* series are federated, labels kept) and
# evaluating RULE_FILE ("" for none) every second; waits until it is ready.
# $PROM_SCRAPE_EXTRA, when set, is more of the job's settings (indented by
# four spaces: scheme, tls_config, basic_auth).
# Sets PROM (its http:// address) and prom_pid.
start_prometheus() {
    local federate="" rule_file port targets="" dir
    if [ "$1" = --federate ]; then
        federate=1
        shift
    fi
    rule_file=$1
    shift
    port=$(free_port)
    PROM=http://127.0.0.1:$port
    dir=$WORK/prometheus-$port
    for target in "$@"; do targets+="${targets:+, }\"$target\""; done
    mkdir -p "$dir/data"
    {
        printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n'
        [ -n "$rule_file" ] && printf 'rule_files:\n  - %s\n' "$rule_file"
        printf 'scrape_configs:\n  - job_name: gpuledger\n'
        [ -n "${PROM_SCRAPE_EXTRA:-}" ] && printf '%s\n' "$PROM_SCRAPE_EXTRA"
        [ -n "$federate" ] &&
            printf '    metrics_path: /federate\n    honor_labels: true\n    params:\n      "match[]": [\x27{__name__=~"gpuledger_.*"}\x27]\n'
        printf '    static_configs:\n      - targets: [%s]\n' "$targets"
    } >"$dir/prometheus.yml"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
        --web.listen-address="127.0.0.1:$port" --log.level=warn >"$dir/prometheus.log" 2>&1 &
    prom_pid=$!
    at_exit "stop_pid $prom_pid"
    wait_for "Prometheus${federate:+ (federating)} is ready" 30 curl -sf "$PROM/-/ready"
}

# prom_query EXPR: the answer to an instant query, as JSON.
prom_query() {
    curl -s --max-time 10 --get --data-urlencode "query=$1" "$PROM/api/v1/query"
}

# prom_has NAME SECONDS EXPR LUA: polls the query EXPR until the Lua
# expression LUA over its decoded answer (j) is true.
prom_has() {
    local name=$1 seconds=$2 expr=$3 check=$4 answer="" _
    for _ in $(seq $((seconds * 2))); do
        answer=$(prom_query "$expr")
        if [ "$(jq_lua "j.status == 'success' and ($check)" "$answer" 2>/dev/null)" = true ]; then
            pass "$name"
            return 0
        fi
        sleep 0.5
    done
    fail "$name" "query: $expr" "last answer: ${answer:0:600}"
    return 1
}
