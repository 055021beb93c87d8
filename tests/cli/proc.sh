#!/usr/bin/env bash
# pid → container through a fixture /proc tree (testdata/proc, docs/sources.md#proc):
# cgroup v1 and v2 Docker, Podman (conmon excluded), /libpod_parent, Nomad
# slices, containerd, host processes (a login session and a bare process are
# tenants of their own: tenants.sh has every such form), and vanished,
# unreadable and empty cgroup files, with a fake nvidia-smi listing those pids. No container
# engine answers here (the Docker socket does not exist, Podman is off), so
# only the proc-derived facts are asserted: whether the Docker source then
# reports an error is not this file's business.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" # what run leaves (with $err and $rc)

PROC=$TESTDATA/proc
mkdir "$WORK/no-rules"
U0=GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01 # the host processes' GPU
U1=GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52 # the containers' GPU

# The fake nvidia-smi's answers: every pid of the tree (and a vanished one).
smi_dir=$WORK/smi
fake_smi_gpus "$smi_dir" "$U0" "$U1"
cat >"$smi_dir/compute-apps.csv" <<EOF
$U0, 6060, 101, python3
$U0, 6161, 102, /usr/bin/python3
$U0, 7171, 103, conmon
$U0, 9090, 104, gone
$U0, 9191, 105, dircgroup
$U0, 9292, 106, empty
$U1, 4242, 201, ffmpeg
$U1, 5151, 202, ffmpeg
$U1, 7070, 203, ffmpeg
$U1, 7272, 204, ffmpeg
$U1, 8080, 205, ffmpeg
$U1, 8181, 206, ffmpeg
$U1, 8282, 207, ffmpeg
$U1, 8383, 208, ffmpeg
EOF
export FAKE_SMI_DIR=$smi_dir

# The container each pid is in (testdata/proc/README.md).
declare -A WANT=(
    [4242]=102a164d2ae9140d20650497e607eae3907f0059483c0bb6d43b188c19fe4066
    [5151]=55ee43b4225d83eda7efe12a6bbe857e7f155802e15158aaf276687b657f3674
    [7070]=42d6165dd53f0ba578586c6c64a104019006aab4f8c16c7f09d1f14e2d22cb84
    [7272]=ea4b691aacbef48b8e67239616fd2783fba3bdd91a04472687e8a2729d4a5402
    [8080]=4001b2dd71f9df9ce12c6369df748829744e24cf7919c9f1f56a15213c783741
    [8181]=9b325d94428311594ec07d613950760830944fd31508a655e470d43bd4c1c91e
    [8282]=a8998b71e30fa00a32f929ea9ce13286c67f6bea7fbbb0d216ed6abaa58c2159
    [8383]=632b389495426fe3f79aac506e412d0700952276fe0a0567c7374558e947fa9c
)
HOST_PIDS="6060 6161 7171 9090 9191 9292"
why_host=([6060]="v2 user slice" [6161]="process_api hash" [7171]="libpod-conmon" [9090]="vanished" [9191]="cgroup is a directory" [9292]="empty cgroup")

# Containers resolved through /proc, no engine that knows them.
ENGINES=(--no-nomad --podman off --docker "unix://$WORK/absent.sock")

gl() {
    run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc "$PROC" --node proc-node --rules "$WORK/no-rules"
}

# --- snapshot: the container ids found ---------------------------------------
gl snapshot "${ENGINES[@]}"
expect_rc "snapshot: exit 0" 0
snap=$out
expect_lua "snapshot: the proc source was read" "$snap" 'j.sources.proc ~= nil and j.sources.proc.ok == true'
for pid in "${!WANT[@]}"; do
    expect_lua "snapshot: pid $pid is in container ${WANT[$pid]:0:12}" "$snap" \
        "j.sources.proc.pids['$pid'] ~= nil and j.sources.proc.pids['$pid'].container_id == '${WANT[$pid]}'"
done
for pid in $HOST_PIDS; do
    expect_lua "snapshot: pid $pid (${why_host[$pid]}) is in no container" "$snap" \
        "j.sources.proc.pids['$pid'] == nil or (j.sources.proc.pids['$pid'].container_id or '') == ''"
done
expect_not_in "snapshot: the conmon container id is not reported" "$snap" "1ce4a22c439afb2c"
expect_not_in "snapshot: the process_api hash is not a container" "$snap" "b833b1b84c81a6f6"

# --- ls --json: host tenants and unknown-container docker tenants (unidentified) ---
gl ls --json "${ENGINES[@]}"
expect_rc "ls --json: exit 0" 0
json=$out
expect_lua "ls: two GPUs" "$json" '#j.entries == 2 and j.entries[1].uuid == "'$U0'" and j.entries[2].uuid == "'$U1'"'
expect_lua "ls: gpu0 has four host tenants: alice's session, root's python3, the unnamed one, the unidentified one" "$json" \
    'if #j.entries[1].tenants ~= 4 then return false end for _, t in ipairs(j.entries[1].tenants) do if t.kind ~= "host" then return false end end return true'
expect_lua "ls: the unnamed host tenant has the pids /proc read no owner or uid of: conmon (no status) and empty" "$json" \
    'for _, t in ipairs(j.entries[1].tenants) do if t.owner == nil and not t.unidentified then return cjson.encode(t.pids) == "[7171,9292]" and t.usedMemoryMiB == 209 end end; return false'
expect_lua "ls: the pids /proc has no record of (vanished, unreadable) are one unidentified host tenant" "$json" \
    'for _, t in ipairs(j.entries[1].tenants) do if t.unidentified then return t.owner == nil and cjson.encode(t.pids) == "[9090,9191]" end end; return false'
expect_lua "ls: the session of uid 1000 (6060) and root's bare process (6161) are tenants of their own" "$json" \
    'local owners = {}; for _, t in ipairs(j.entries[1].tenants) do if t.owner then owners[#owners + 1] = t.owner .. ":" .. t.user .. ":" .. cjson.encode(t.pids) end end; table.sort(owners); return table.concat(owners, " ") == "process:root:[6161] user:alice:[6060]"'
expect_lua "ls: no host tenant carries a container id" "$json" \
    'for _, t in ipairs(j.entries[1].tenants) do if t.containerId ~= nil then return false end end; return true'
expect_lua "ls: gpu1 has one tenant per container" "$json" "#j.entries[2].tenants == ${#WANT[@]}"
for pid in "${!WANT[@]}"; do
    short=${WANT[$pid]:0:12}
    expect_lua "ls: pid $pid is a docker tenant with container id $short" "$json" \
        "for _, t in ipairs(j.entries[2].tenants) do if t.containerId == '$short' then return t.kind == 'docker' and #t.pids == 1 and t.pids[1] == $pid and t.container == nil and t.allocId == nil and t.reserved == false and t.unidentified == true end end; return false"
done
expect_lua "ls: tenants ordered by memory, largest first" "$json" \
    'local t = j.entries[2].tenants; for i = 2, #t do if t[i - 1].usedMemoryMiB < t[i].usedMemoryMiB then return false end end; return true'
expect_lua "ls: both GPUs unaccounted" "$json" 'j.entries[1].state == "unaccounted" and j.entries[2].state == "unaccounted"'
expect_lua "ls: no error names proc" "$json" 'for _, e in ipairs(j.errors or {}) do if e:find("proc", 1, true) then return false end end; return true'

gl ls "${ENGINES[@]}"
expect_rc "ls: exit 0" 0
for pid in 4242 7070 8383; do
    expect_in "ls: docker:${WANT[$pid]:0:12} in the table" "$out" "docker:${WANT[$pid]:0:12}"
done

gl check --json "${ENGINES[@]}"
expect_rc "check --json: exit 0" 0
expect_lua "check: one unmanaged-tenant per identified host tenant, none for a container no engine knows" "$out" \
    "local n = 0; for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' then n = n + 1 end end; return n == 3"
expect_lua "check: one source-unavailable on a GPU per unknown container and one for the unidentified processes" "$out" \
    "local n = 0; for _, f in ipairs(j.findings) do if f.code == 'source-unavailable' and f.gpu then n = n + 1 end end; return n == ${#WANT[@]} + 1"
expect_lua "check: unknown containers named by their 12-char id, with the engine's failure" "$out" \
    "for _, f in ipairs(j.findings) do if f.code == 'source-unavailable' and f.message:find('${WANT[4242]:0:12}', 1, true) then return f.message:find('${WANT[4242]:0:13}', 1, true) == nil and f.message:find('docker unix://$WORK/absent.sock', 1, true) ~= nil end end; return false"

# --- --no-docker: no pid → container resolution at all ------------------------------
gl ls --json --no-docker --no-nomad
expect_rc "--no-docker: exit 0" 0
expect_lua "--no-docker: every GPU process is a host tenant (not unidentified: the operator chose not to resolve)" "$out" \
    'return #j.entries[1].tenants == 1 and j.entries[1].tenants[1].kind == "host" and #j.entries[2].tenants == 1 and j.entries[2].tenants[1].kind == "host" and #j.entries[2].tenants[1].pids == 8 and j.entries[1].tenants[1].unidentified == nil and j.entries[2].tenants[1].unidentified == nil'
gl snapshot --no-docker --no-nomad
expect_not_in "--no-docker: the snapshot holds no container id" "$out" "${WANT[4242]}"

# --- a proc root that is not there -------------------------------------------
run ls --json --nvidia-smi "$FAKES/nvidia-smi" --proc "$WORK/no-proc" --node proc-node --rules "$WORK/no-rules" "${ENGINES[@]}"
expect_rc "missing proc root: ls exits 0" 0
expect_lua "missing proc root: the processes are one host tenant, unidentified" "$out" \
    'return #j.entries == 2 and j.entries[2].tenants[1].kind == "host" and #j.entries[2].tenants == 1 and j.entries[2].tenants[1].unidentified == true'
expect_lua "missing proc root: an error names it" "$out" \
    "for _, e in ipairs(j.errors or {}) do if e:find('$WORK/no-proc', 1, true) then return true end end; return false"

finish
