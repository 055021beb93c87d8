#!/usr/bin/env bash
# Runs HERE, before the device call (tests/real-gpu/README.md): builds gpuledger
# and packs it for a machine without Lua, libcurl or libmicrohttpd:
#
#   tests/real-gpu/carry/gpuledger        the binary (Lua scripts embedded)
#   tests/real-gpu/carry/lib/             every shared library ldd lists that is not glibc
#   tests/real-gpu/carry/glibc/           this machine's glibc (loader, libc, libm, …), used
#                                         only when the GPU machine's glibc is older
#   tests/real-gpu/carry/glibc-needed.txt the newest GLIBC_x.y symbol version the above need
#   tests/real-gpu/carry/MANIFEST.txt     commit, build, ldd output, sizes, sha256
#
# Then proves the copies are the ones loaded (LD_LIBRARY_PATH=carry/lib: ldd and
# LD_DEBUG=libs; the carried loader; a chroot holding nothing but the carry and
# glibc when this machine allows chroot) and prints the total size.
# GPULEDGER_BUILD names the build directory (default build/).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${GPULEDGER_BUILD:-$src/build}
carry=$here/carry
limit_mib=32 # the carry limit is 64 MiB for everything; keep well under it

say() { printf 'pack: %s\n' "$*"; }
die() { printf 'pack: FAILED: %s\n' "$*" >&2; exit 1; }

# --- build -------------------------------------------------------------------
if [ -f "$build/CMakeCache.txt" ] && grep -q '^GPULEDGER_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
    say "$build is a sanitizer build; using $src/build-realgpu instead"
    build=$src/build-realgpu
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
    say "configuring $build (RelWithDebInfo)"
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
say "building $build"
cmake --build "$build" -j"$(nproc)" --target gpuledger >/dev/null
bin=$build/gpuledger
[ -x "$bin" ] || die "no binary at $bin"

# --- copy --------------------------------------------------------------------
# is_glibc NAME PATH: the library belongs to glibc itself (dpkg agrees on Debian).
is_glibc() {
    case $1 in
        linux-vdso.so.* | linux-gate.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | \
            libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | \
            libnsl.so.* | libBrokenLocale.so.* | libthread_db.so.* | libnss_*.so.* | libc_malloc_debug.so.*)
            return 0 ;;
    esac
    if [ -n "$2" ] && command -v dpkg >/dev/null; then
        dpkg -S "$2" "$(readlink -f "$2")" 2>/dev/null | grep -q '^libc6[:,]' && return 0
    fi
    return 1
}

ldd_out=$(ldd "$bin") || die "ldd $bin failed"
if grep -q 'not found' <<<"$ldd_out"; then die "ldd: a library is missing here: $(grep 'not found' <<<"$ldd_out")"; fi

rm -rf "$carry"
mkdir -p "$carry/lib" "$carry/glibc"
cp "$bin" "$carry/gpuledger"

nonglibc=() glibc=()
while read -r line; do
    name="" path=""
    if [[ $line =~ ^([^[:space:]]+)[[:space:]]+=\>[[:space:]]+([^[:space:]]+)[[:space:]]+\( ]]; then
        name=${BASH_REMATCH[1]} path=${BASH_REMATCH[2]}
    elif [[ $line =~ ^(/[^[:space:]]+)[[:space:]]+\( ]]; then # the loader
        path=${BASH_REMATCH[1]} name=${path##*/}
    else
        continue # linux-vdso (no file)
    fi
    if is_glibc "$name" "$path"; then
        cp -L "$path" "$carry/glibc/$name"
        glibc+=("$name")
    else
        cp -L "$path" "$carry/lib/$name"
        nonglibc+=("$name")
    fi
done <<<"$ldd_out"
chmod 0755 "$carry/glibc/"ld-linux*.so.* 2>/dev/null || true
say "carried ${#nonglibc[@]} libraries: ${nonglibc[*]}"
say "glibc fallback (${#glibc[@]}): ${glibc[*]}"

# The newest glibc symbol version the binary and the carried libraries ask for.
needed=$(cat "$carry/gpuledger" "$carry/lib/"* | grep -aoE 'GLIBC_2\.[0-9]+(\.[0-9]+)?' | sort -uV | tail -1)
printf '%s\n' "${needed#GLIBC_}" >"$carry/glibc-needed.txt"
say "needs glibc >= ${needed#GLIBC_} (this machine: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown))"

# --- prove the copies are loaded ---------------------------------------------
fail=0
check_loaded() { # LABEL FILE-OF-LD_DEBUG-OUTPUT ALLOWED-DIR...: each library initialised comes from an allowed dir
    local label=$1 verbose=$2 dbg=$3 lib path ok dir
    shift 3
    for lib in "${nonglibc[@]}"; do
        path=$(grep -oE "calling init: [^[:space:]]*/$lib\$" "$dbg" | head -1 | sed 's/^calling init: //')
        ok=0
        for dir in "$@"; do [ "${path%/*}" = "$dir" ] && ok=1; done
        if [ "$ok" = 1 ]; then
            [ "$verbose" = 0 ] || printf '  %-24s %s\n' "$lib" "$path"
        else
            printf '  %-24s NOT FROM THE CARRY: %s\n' "$lib" "${path:-never loaded}"
            fail=1
        fi
    done
    [ "$fail" = 1 ] || say "$label: each of the ${#nonglibc[@]} carried libraries was loaded from the carry"
}
dbg=$(mktemp)
trap 'rm -f "$dbg"' EXIT

say "proof 1: LD_LIBRARY_PATH=carry/lib ldd carry/gpuledger"
while read -r name _ path _; do
    [ -n "$name" ] || continue
    for lib in "${nonglibc[@]}"; do
        if [ "$name" = "$lib" ] && [ "${path%/*}" != "$carry/lib" ]; then
            say "  $name resolves to $path, not the carry"
            fail=1
        fi
    done
done < <(LD_LIBRARY_PATH=$carry/lib ldd "$carry/gpuledger" | grep '=>')

say "proof 2: LD_DEBUG=libs LD_LIBRARY_PATH=carry/lib carry/gpuledger version"
out=$(LD_DEBUG=libs LD_DEBUG_OUTPUT="$dbg.d" LD_LIBRARY_PATH=$carry/lib "$carry/gpuledger" version) || die "carry/gpuledger version failed"
cat "$dbg.d".* >"$dbg"
rm -f "$dbg.d".*
say "  said: $out"
check_loaded "proof 2" 1 "$dbg" "$carry/lib"

loader=$(find "$carry/glibc" -name 'ld-linux*' | head -1)
say "proof 3: the carried loader: ${loader#"$here/"} --library-path carry/lib:carry/glibc carry/gpuledger version"
out=$(LD_DEBUG=libs LD_DEBUG_OUTPUT="$dbg.d" "$loader" --library-path "$carry/lib:$carry/glibc" "$carry/gpuledger" version) || die "the carried loader failed"
cat "$dbg.d".* >"$dbg"
rm -f "$dbg.d".*
say "  said: $out"
check_loaded "proof 3" 0 "$dbg" "$carry/lib"
for lib in "${glibc[@]}"; do
    case $lib in ld-linux*) continue ;; esac
    grep -qE "calling init: $carry/glibc/$lib\$" "$dbg" || { say "  $lib not loaded from carry/glibc"; fail=1; }
done

# proof 4: a root holding only glibc and the carry (no libcurl, no libmicrohttpd).
root=$(mktemp -d)
chroot=$(command -v chroot || true)
if [ "$(id -u)" = 0 ] && [ -n "$chroot" ]; then
    mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu" "$root/carry"
    cp "$carry/glibc/"* "$root/lib/x86_64-linux-gnu/"
    cp "$loader" "$root/lib64/"
    cp -r "$carry/lib" "$carry/gpuledger" "$root/carry/"
    if out=$(env -i LD_LIBRARY_PATH=/carry/lib "$chroot" "$root" /carry/gpuledger ls --demo 2>&1); then
        say "proof 4: in a chroot with only glibc and the carry, gpuledger ls --demo works ($(wc -l <<<"$out") lines)"
    else
        say "proof 4: chroot run failed: ${out:0:300}"
        fail=1
    fi
    if out=$(env -i "$chroot" "$root" /carry/gpuledger version 2>&1); then
        say "proof 4: without LD_LIBRARY_PATH it ran too: the chroot is not bare"
        fail=1
    elif grep -q 'cannot open shared object' <<<"$out"; then
        say "proof 4: without LD_LIBRARY_PATH it fails there, as it should: ${out:0:120}"
    else
        say "proof 4: without LD_LIBRARY_PATH it failed otherwise: ${out:0:200}"
        fail=1
    fi
else
    say "proof 4: skipped (needs root and chroot)"
fi
rm -rf "$root"
[ "$fail" = 0 ] || die "the carry is not self-contained (above)"

# --- manifest and size ---------------------------------------------------------
{
    echo "gpuledger carry for tests/real-gpu/run.sh"
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(getconf GNU_LIBC_VERSION 2>/dev/null)"
    echo "commit: $(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$src" diff --quiet HEAD -- src lua CMakeLists.txt 2>/dev/null || echo ' (+ uncommitted changes in src/lua)')"
    echo "build: $build ($(grep -E '^CMAKE_BUILD_TYPE:' "$build/CMakeCache.txt" 2>/dev/null))"
    echo "glibc needed: ${needed#GLIBC_}"
    echo
    echo "ldd $bin:"
    printf '%s\n' "$ldd_out"
    echo
    echo "files:"
    (cd "$carry" && find . -type f ! -name MANIFEST.txt -printf '%P\n' | sort | while read -r f; do
        printf '%10d  %s  %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)" "$f"
    done)
} >"$carry/MANIFEST.txt"

bytes=$(du -sb "$carry" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
say "carry: $carry, $(find "$carry" -type f | wc -l) files, $bytes bytes ($mib MiB)"
[ "$bytes" -lt $((limit_mib * 1048576)) ] || die "the carry is over ${limit_mib} MiB"
say "ok: on the device, run: bash tests/real-gpu/run.sh   (carry: [\"tests/real-gpu/carry\"])"
