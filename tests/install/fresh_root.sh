#!/usr/bin/env bash
# The README's two commands on a fresh Debian machine, and the .deb. Makes a
# fresh minimal Debian root (mmdebstrap --variant=minbase, from this
# machine's own Debian mirror: scripts/debian-sources), copies the source
# tree into it and runs `scripts/setup` there as root, with nothing
# installed but Debian's essential packages and apt: setup must install
# every build dependency itself, build, and print the demo node's ledger
# (the same as the build under test prints). Then, in that root, runs the
# README's .deb commands as written (build the .deb, apt-get install it) and
# `scripts/test` on a few tests (it installs what the tests need and runs
# them in both builds). In a second fresh root, the .deb's whole life:
# installed (the files, the user, the options file root's alone, the unit
# installed but not enabled), enabled, upgraded (restarted), removed
# (stopped; configuration and history kept), purged (nothing of it left but
# the user). About 8 minutes, most of it apt downloading and the sanitizer
# build. Needs root; exits 77 when the mirror cannot be reached.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "skip: making a Debian root with mmdebstrap needs root"
    exit 77
fi
if ! command -v mmdebstrap >/dev/null; then
    echo "skip: mmdebstrap is not installed (scripts/test installs it)"
    exit 77
fi
"$SRC/scripts/debian-sources" >"$WORK/sources.list" || exit 1
read -r _ mirror suite _ <"$WORK/sources.list"
if ! curl -fsS --max-time 20 -o /dev/null "$mirror/dists/$suite/InRelease" 2>"$WORK/curl.err"; then
    echo "skip: the Debian mirror $mirror cannot be reached: $(cat "$WORK/curl.err")"
    exit 77
fi
echo "fresh roots from $mirror ($suite), made with mmdebstrap --variant=minbase"

# The source tree as a checkout has it (tracked and new files, no build
# output), or the whole directory when it is not a git checkout.
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
        tar --null -T - -cf "$WORK/source.tar")
else
    tar -C "$SRC" --exclude='./build*' --exclude=./dist -cf "$WORK/source.tar" .
fi

# fresh_root NAME HOOK: makes the fresh root $WORK/NAME and runs the script
# HOOK with the root's path in it (mmdebstrap's customize hook, with /proc
# and /dev mounted), then removes the root. mmdebstrap's log goes to
# $WORK/NAME.log. Returns mmdebstrap's status.
fresh_root() {
    local status=0
    mmdebstrap --variant=minbase --mode=root --customize-hook="bash $2 \"\$1\"" \
        "$suite" "$WORK/$1" "$WORK/sources.list" >"$WORK/$1.log" 2>&1 || status=$?
    rm -rf "${WORK:?}/$1"
    return $status
}

# The second command, scripts/test, with a few tests of every kind that
# needs no service (the real-component and install tests would download a
# gigabyte more and make roots inside the root).
SOME_TESTS='^(lua-specs|c-csv|cli-usage|cli-golden|lint)$'

# --- 1. scripts/setup in a fresh root, then the README's .deb commands as written ---------------
if ! readme_block "fresh_root.sh runs this block" >"$WORK/readme-deb.sh"; then
    fail "README.md has the .deb install commands, marked for this test"
    finish
fi
cat >"$WORK/setup-hook.sh" <<EOF
root=\$1
mkdir "\$root/src" && tar -C "\$root/src" -xf "$WORK/source.tar"
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 chroot "\$root" "\$@"; }
in_root bash -c 'cd /src && scripts/setup' >"$WORK/setup.out" 2>"$WORK/setup.err"
echo \$? >"$WORK/setup.rc"
if [ "\$(cat "$WORK/setup.rc")" = 0 ]; then
    cp "$WORK/readme-deb.sh" "\$root/readme-deb.sh"
    in_root bash -c 'cd /src && DEBIAN_FRONTEND=noninteractive bash -e /readme-deb.sh' >"$WORK/cpack.log" 2>&1
    echo \$? >"$WORK/readme-deb.rc"
    in_root gpuledger version >"$WORK/readme-deb.version" 2>&1
    cp "\$root"/src/build/gpuledger_*.deb "$WORK/" 2>>"$WORK/cpack.log"
    in_root bash -c "cd /src && scripts/test -R '$SOME_TESTS'" >"$WORK/test.out" 2>&1
    echo \$? >"$WORK/test.rc"
fi
exit 0
EOF
if ! fresh_root setup-root "$WORK/setup-hook.sh"; then
    fail "mmdebstrap makes the fresh root" "$(tail -n 5 "$WORK/setup-root.log")"
    finish
fi
rc=$(cat "$WORK/setup.rc" 2>/dev/null || echo none) out=$(cat "$WORK/setup.out") err=$(cat "$WORK/setup.err")
expect_rc "scripts/setup exits 0 in a fresh Debian root" 0
expect_in "setup says what it installs" "$err" "install-missing: installing "
expect_eq "setup prints the demo node's ledger" "$out" "$("$GPULEDGER" ls --demo)"
expect_eq "the README's .deb commands, as written, build and install the package" "$(cat "$WORK/readme-deb.rc" 2>/dev/null)" 0
expect_eq "... and the installed gpuledger runs" "$(cat "$WORK/readme-deb.version" 2>/dev/null)" "$("$GPULEDGER" version | sed 's/+.*//')"
tested=$(cat "$WORK/test.out" 2>/dev/null)
expect_eq "then scripts/test -R '$SOME_TESTS' exits 0" "$(cat "$WORK/test.rc" 2>/dev/null)" 0
expect_in "... having installed busted and configured the tests: the normal build's 5 pass" "$tested" \
    "100% tests passed, 0 tests failed out of 5"
expect_in "... and the sanitizer build's" "$(sed -n '/sanitizer build/,$p' <<<"$tested")" \
    "100% tests passed, 0 tests failed out of 5"

# --- 2. the .deb's life in a second fresh root ---------------------------------------------------
# Install, enable, upgrade, remove, purge, as an operator would. The root has
# no running systemd: /run/systemd/system is made, as systemd makes it, and
# systemctl is a stand-in that writes each call to /tmp/systemctl.log and
# answers is-enabled and is-active from the unit's symlink and a marker file,
# so that what the maintainer scripts ask of systemd (through debhelper's
# deb-systemd-helper and deb-systemd-invoke) can be read back.
debs=("$WORK"/gpuledger_*.deb)
deb=${debs[0]}
if [ ! -f "$deb" ]; then
    fail "cpack -G DEB makes gpuledger_<version>_amd64.deb" "$(tail -n 5 "$WORK/cpack.log" 2>/dev/null)"
    finish
fi
pass "cpack -G DEB makes $(basename "$deb")"
mkdir "$WORK/deb"
cat >"$WORK/systemctl" <<'EOF'
#!/bin/sh
echo "$*" >>/tmp/systemctl.log
case "$*" in
*is-enabled*) if [ -e /etc/systemd/system/multi-user.target.wants/gpuledger.service ]; then echo enabled; exit 0; fi
    echo disabled; exit 1 ;;
*is-active*) [ -e /run/gpuledger-active ] ;;
*) exit 0 ;;
esac
EOF
cat >"$WORK/deb-hook.sh" <<EOF
root=\$1
out=$WORK/deb
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive chroot "\$root" "\$@"; }
rm -f "\$root/usr/sbin/policy-rc.d"
mkdir -p "\$root/run/systemd/system"
install -m 0755 "$WORK/systemctl" "\$root/usr/bin/systemctl"
cp "$deb" "\$root/tmp/gpuledger.deb"
# The upgrade: the same package with a higher version.
in_root sh -c 'dpkg-deb -R /tmp/gpuledger.deb /tmp/next && sed -i "s/^Version: .*/&+next/" /tmp/next/DEBIAN/control &&
    dpkg-deb -b /tmp/next /tmp/gpuledger-next.deb' >"\$out/repack.log" 2>&1
step() { echo "== \$1" >>"\$root/tmp/systemctl.log"; }
step install
in_root apt-get install -y --no-install-recommends /tmp/gpuledger.deb >"\$out/install.log" 2>&1
echo \$? >"\$out/install.rc"
in_root gpuledger version >"\$out/version" 2>&1
in_root gpuledger ls --demo >"\$out/demo" 2>&1
in_root dpkg -L gpuledger >"\$out/files"
in_root dpkg-query -W -f='\${Depends}' gpuledger >"\$out/depends"
in_root getent passwd gpuledger >"\$out/user"
in_root stat -c '%a %U:%G' /etc/default/gpuledger >"\$out/default-mode"
(cd "\$root" && find etc/systemd -name 'gpuledger*') >"\$out/enabled"
step enable # what systemctl enable --now does
mkdir -p "\$root/etc/systemd/system/multi-user.target.wants"
ln -s /usr/lib/systemd/system/gpuledger.service "\$root/etc/systemd/system/multi-user.target.wants/gpuledger.service"
touch "\$root/run/gpuledger-active"
mkdir -p "\$root/var/lib/gpuledger" && echo '{}' >"\$root/var/lib/gpuledger/history.json"
step upgrade
in_root apt-get install -y --no-install-recommends /tmp/gpuledger-next.deb >"\$out/upgrade.log" 2>&1
echo \$? >"\$out/upgrade.rc"
in_root dpkg-query -W -f='\${Version}' gpuledger >"\$out/upgraded-version"
(cd "\$root" && find etc/systemd -name 'gpuledger*') >"\$out/enabled-after-upgrade"
step remove
in_root apt-get remove -y gpuledger >"\$out/remove.log" 2>&1
echo \$? >"\$out/remove.rc"
rm -f "\$root/run/gpuledger-active"
[ -e "\$root/usr/bin/gpuledger" ] && echo /usr/bin/gpuledger >"\$out/left-after-remove"
[ -e "\$root/etc/default/gpuledger" ] && echo /etc/default/gpuledger >>"\$out/left-after-remove"
[ -e "\$root/var/lib/gpuledger/history.json" ] && echo /var/lib/gpuledger/history.json >>"\$out/left-after-remove"
step purge
in_root apt-get purge -y gpuledger >"\$out/purge.log" 2>&1
echo \$? >"\$out/purge.rc"
in_root dpkg-query -W -f='\${Status}' gpuledger >"\$out/status-after" 2>&1
while read -r file; do [ -f "\$root\$file" ] || [ -L "\$root\$file" ] && echo "\$file"; done <"\$out/files" >"\$out/left"
[ -d "\$root/etc/gpuledger" ] && echo /etc/gpuledger >>"\$out/left"
[ -e "\$root/var/lib/gpuledger" ] && echo /var/lib/gpuledger >>"\$out/left"
(cd "\$root" && find etc/systemd var/lib/systemd -name 'gpuledger*' 2>/dev/null) >>"\$out/left"
in_root getent passwd gpuledger >"\$out/user-after"
cp "\$root/tmp/systemctl.log" "\$out/systemctl.log"
exit 0
EOF
if ! fresh_root deb-root "$WORK/deb-hook.sh"; then
    fail "mmdebstrap makes the second fresh root" "$(tail -n 5 "$WORK/deb-root.log")"
    finish
fi
calls=$(cat "$WORK/deb/systemctl.log")
# what_systemd_heard STEP: the systemctl calls made during that step.
what_systemd_heard() { sed -n "/^== $1\$/,/^== /p" <<<"$calls" | grep -v '^== '; }
expect_eq "apt-get installs the .deb and its dependencies" "$(cat "$WORK/deb/install.rc")" 0
expect_not_in "... without a warning from adduser" "$(cat "$WORK/deb/install.log")" "Warning"
# (built from a copy without .git: the project's version, no commit)
version=$("$GPULEDGER" version)
expect_eq "gpuledger version (from /usr/bin)" "$(cat "$WORK/deb/version")" "${version%%+*}"
expect_eq "the installed gpuledger shows the demo ledger" "$(cat "$WORK/deb/demo")" "$("$GPULEDGER" ls --demo)"
files=$(cat "$WORK/deb/files")
for path in /usr/bin/gpuledger /usr/share/man/man1/gpuledger.1.gz /usr/lib/systemd/system/gpuledger.service \
    /etc/default/gpuledger /etc/gpuledger/rules.d /etc/gpuledger/scripts /usr/share/doc/gpuledger/copyright \
    /usr/share/doc/gpuledger/examples/thresholds.lua; do
    expect_in "the package installs $path" "$files" "$path"
done
depends=$(cat "$WORK/deb/depends")
for package in libcurl4 libmicrohttpd12 adduser init-system-helpers; do
    expect_in "the package depends on $package" "$depends" "$package"
done
expect_in "the package makes the system user gpuledger" "$(cat "$WORK/deb/user")" "gpuledger:"
expect_in "... whose home is the history's directory" "$(cat "$WORK/deb/user")" ":/var/lib/gpuledger:"
expect_eq "/etc/default/gpuledger (where NOMAD_TOKEN goes) is root's alone" "$(cat "$WORK/deb/default-mode")" "600 root:root"
expect_eq "the systemd unit is not enabled" "$(cat "$WORK/deb/enabled")" ""
expect_in "install: systemd reloads its units" "$(what_systemd_heard install)" "daemon-reload"
expect_not_in "... and nothing is started" "$(what_systemd_heard install)" "start"
expect_eq "apt-get upgrades it" "$(cat "$WORK/deb/upgrade.rc")" 0
expect_in "... to the new version" "$(cat "$WORK/deb/upgraded-version")" "+next"
expect_in "upgrade: the enabled, running service is restarted" "$(what_systemd_heard upgrade)" "--system restart gpuledger.service"
expect_in "... and stays enabled" "$(cat "$WORK/deb/enabled-after-upgrade")" "multi-user.target.wants/gpuledger.service"
expect_eq "apt-get remove removes it" "$(cat "$WORK/deb/remove.rc")" 0
expect_in "remove: the service is stopped" "$(what_systemd_heard remove)" "stop gpuledger.service"
expect_eq "... the binary is gone; the options file and the history stay" "$(cat "$WORK/deb/left-after-remove" 2>/dev/null)" \
    "/etc/default/gpuledger
/var/lib/gpuledger/history.json"
expect_eq "apt-get purge removes it" "$(cat "$WORK/deb/purge.rc")" 0
expect_not_in "dpkg no longer knows it" "$(cat "$WORK/deb/status-after")" "install ok"
expect_eq "nothing of it is left (/etc/gpuledger, /etc/default/gpuledger, /var/lib/gpuledger, the unit's links)" \
    "$(cat "$WORK/deb/left")" ""
expect_in "... but the user, as Debian keeps system users" "$(cat "$WORK/deb/user-after")" "gpuledger:"
finish
