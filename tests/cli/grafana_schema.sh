#!/usr/bin/env bash
# deploy/grafana/gpuledger.json against Grafana's own dashboard schema. No
# Grafana can be installed here (not in Debian; npm has its libraries, not
# the server), so the dashboard is type-checked against the Dashboard type
# of Grafana's @grafana/schema package (generated from the schema Grafana
# validates with), for the oldest and the newest release it passes, with
# TypeScript's excess-property checks on: a wrong type, a missing required
# field or an unknown key fails. A mutated copy must fail, so the check can.
# (Its queries run against a real Prometheus in report_prometheus.sh.)
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"

DASHBOARD=$SRC/deploy/grafana/gpuledger.json
SCHEMA_VERSIONS=${GRAFANA_SCHEMA_VERSIONS:-11.0.0 13.2.3}
TYPESCRIPT_VERSION=5.9.3
CACHE=${GPULEDGER_BUILD_DIR:-$WORK}/grafana-schema
if ! need_program node nodejs || ! need_program npm npm; then
    skip "grafana schema" "node and npm (Debian nodejs, npm) are not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
    finish
fi

# --- what a file for import and provisioning needs --------------------------------
expect_lua "the dashboard: fixed uid, title, schemaVersion 39, no id" "$(cat "$DASHBOARD")" \
    'j.uid == "gpuledger" and j.title == "gpuledger" and j.schemaVersion == 39 and j.id == cjson.null'
expect_lua "panel ids are unique and every panel fits the 24-column grid" "$(cat "$DASHBOARD")" '
    local seen = {}
    for _, p in ipairs(j.panels) do
      if seen[p.id] or p.gridPos.x + p.gridPos.w > 24 then return false end
      seen[p.id] = true
    end
    return true'
expect_lua "__requires names prometheus and every panel type used" "$(cat "$DASHBOARD")" '
    local required = {}
    for _, r in ipairs(j.__requires) do required[r.type .. ":" .. r.id] = true end
    if not required["datasource:prometheus"] then return false end
    for _, p in ipairs(j.panels) do
      if p.type ~= "row" and not required["panel:" .. p.type] then return false end
    end
    return true'

# typecheck NAME SCHEMA_DIR JSON WANT: type-checks the dashboard JSON (less
# the import metadata __inputs and __requires, which the model does not
# include) as a Dashboard of the @grafana/schema in SCHEMA_DIR; WANT is pass
# or fail.
typecheck() {
    local name=$1 dir=$2 json=$3 want=$4 said got=pass
    python3 - "$json" "$dir/check.ts" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
for key in ("__inputs", "__requires"):
    dashboard.pop(key, None)
with open(sys.argv[2], "w") as f:
    f.write('import type { Dashboard } from "@grafana/schema";\n')
    f.write("export const dashboard: Dashboard = " + json.dumps(dashboard, indent=1) + ";\n")
PY
    said=$(cd "$dir" && timeout 300 node_modules/.bin/tsc --noEmit --strict --skipLibCheck \
        --moduleResolution bundler --module esnext --target es2022 check.ts 2>&1) || got=fail
    if [ "$got" = "$want" ]; then
        pass "$name"
    else
        fail "$name" "the type check: $got, want $want" "${said:0:2000}"
    fi
}

python3 - "$DASHBOARD" "$WORK/mutant.json" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
dashboard["schemaVersion"] = "39"
del dashboard["panels"][1]["gridPos"]["h"]
json.dump(dashboard, open(sys.argv[2], "w"))
PY
for version in $SCHEMA_VERSIONS; do
    dir=$CACHE/$version
    mkdir -p "$dir"
    if ! (cd "$dir" && timeout 300 npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        "@grafana/schema@$version" "typescript@$TYPESCRIPT_VERSION") >"$WORK/npm.log" 2>&1; then
        skip "@grafana/schema $version" "npm could not install it: $(tail -1 "$WORK/npm.log")"
        continue
    fi
    typecheck "the dashboard is a Dashboard of @grafana/schema $version" "$dir" "$DASHBOARD" pass
    typecheck "a mutated dashboard (schemaVersion a string, a panel without h) is not ($version)" "$dir" "$WORK/mutant.json" fail
done
finish
