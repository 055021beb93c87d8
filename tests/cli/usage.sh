#!/usr/bin/env bash
# The command line through the real binary (docs/contract.md#command-line):
# version, help, -h, unknown commands and flags, flags before the command,
# stray arguments, and the validation of --exit-on, --interval, --timeout,
# --rules and the fleet/report requirements. Every usage error exits 2 with
# ONE line on stderr ("gpuledger: ..."), an unknown command too (no usage
# dump: `gpuledger help` lists the commands).
# Nothing here reads a GPU: the runs that get past parsing use --demo.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
out="" err="" # what run leaves (with $rc)

# The environment must not supply defaults the checks below rely on.

# nlines TEXT: the number of lines in TEXT (0 when empty).
nlines() {
    if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi
}

# usage_error NAME ARGS...: ARGS is a usage error: exit 2, nothing on stdout,
# one line on stderr starting "gpuledger: ". Leaves $out, $err, $rc.
usage_error() {
    local name=$1
    shift
    run "$@"
    expect_rc "$name: exit 2" 2
    expect_eq "$name: nothing on stdout" "$out" ""
    expect_eq "$name: one line on stderr" "$(nlines "$err")" 1
    expect_eq "$name: stderr starts gpuledger:" "${err:0:11}" "gpuledger: "
}

# --- version and help -------------------------------------------------------
# The project's version (CMakeLists.txt), and in a git checkout the commit
# after a "+".
project_version=$(sed -n 's/^project(gpuledger VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
run version
expect_rc "version: exit 0" 0
case $out in
    "gpuledger $project_version" | "gpuledger $project_version+"?*) pass "version: prints gpuledger ${project_version}[+commit]" ;;
    *) fail "version: prints gpuledger ${project_version}[+commit]" "got: $out" ;;
esac
expect_eq "version: nothing on stderr" "$err" ""
version_text=$out

run help
expect_rc "help: exit 0" 0
expect_in "help: usage on stdout" "$out" "usage: gpuledger"
expect_in "help: lists the commands" "$out" "snapshot"
expect_in "help: lists the flags" "$out" "--exit-on"
expect_eq "help: nothing on stderr" "$err" ""
expect_in "help: how to ask for help" "$out" "
       gpuledger help [COMMAND] | -h | --help | COMMAND -h
"
expect_in "help: how to ask for the version" "$out" "
       gpuledger version | -v | --version
"
usage_text=$out

for args in "-h" "--help" "-help"; do
    run "$args"
    expect_rc "$args: exit 0" 0
    expect_eq "$args: the usage on stdout" "$out" "$usage_text"
    expect_eq "$args: nothing on stderr" "$err" ""
done
for args in "-v" "--version"; do
    run "$args"
    expect_rc "$args: exit 0" 0
    expect_eq "$args: prints what version prints" "$out" "$version_text"
    expect_eq "$args: nothing on stderr" "$err" ""
done

# The man page is made from the help (cmake/manpage.awk): a line at the
# margin is a paragraph of its own, not more of the entry above it.
manpage=$(printf '%s' "$usage_text" | awk -v version=test -f "$SRC/cmake/manpage.awk")
expect_in "man page: the help entry holds its own text only" "$manpage" "
.B help
print this help
.PP
\`gpuledger help COMMAND\`"
expect_in "man page: each usage line of the SYNOPSIS a line of its own" "$manpage" '
.br
gpuledger help [COMMAND] | \-h | \-\-help | COMMAND \-h
.br
gpuledger version | \-v | \-\-version
'

# help COMMAND, and COMMAND -h: that command's flags only.
run help ls
expect_rc "help ls: exit 0" 0
help_ls=$out
expect_in "help ls: its usage line" "$help_ls" "usage: gpuledger ls [flags]"
for flag in --wide --json --proc --replay --history --interval; do
    expect_in "help ls: ls's $flag" "$help_ls" "  $flag"
done
for flag in --exit-on --listen --allow-unmanaged --targets --consul --since; do
    expect_not_in "help ls: not $flag, which ls does not read" "$help_ls" "  $flag"
done
for args in "ls -h" "ls --help" "ls --json -h"; do
    # shellcheck disable=SC2086 # split on purpose
    run $args
    expect_rc "$args: exit 0" 0
    expect_eq "$args: ls's help on stdout" "$out" "$help_ls"
done
run help check
expect_in "help check: --exit-on" "$out" "  --exit-on"
expect_in "help check: --wide (one line per finding on a terminal)" "$out" "  --wide"
expect_not_in "help check: not --listen" "$out" "  --listen"
run help serve
expect_in "help serve: --listen and --interval" "$out" "  --interval"
usage_error "help of a command that does not exist" help nope
run help version
expect_in "help version: its usage line" "$out" "
usage: gpuledger version | -v | --version
"
run help fleet
expect_in "help fleet: its usage line names the sub-commands" "$out" "
usage: gpuledger fleet ls|check|serve [flags]
"
for flag in --exit-on --listen --json; do
    expect_in "help fleet: its sub-commands' $flag" "$out" "  $flag"
done
expect_in "help fleet: fleet check's own --summary" "$out" "  fleet check --summary:"
run help fleet check
expect_rc "help fleet check: exit 0" 0
help_fleet_check=$out
expect_in "help fleet check: its usage line" "$help_fleet_check" "
usage: gpuledger fleet check [flags]
"
for flag in --exit-on --wide --targets; do
    expect_in "help fleet check: its $flag" "$help_fleet_check" "  $flag"
done
expect_in "help fleet check: its own --summary" "$help_fleet_check" "  fleet check --summary:"
for flag in --listen --interval --grafana-url; do
    expect_not_in "help fleet check: not $flag, which fleet check does not read" "$help_fleet_check" "  $flag"
done
run fleet check -h
expect_eq "fleet check -h: help fleet check" "$out" "$help_fleet_check"
usage_error "help of a fleet sub-command that does not exist" help fleet rm
expect_eq "... names the sub-commands" "$err" 'gpuledger: help fleet "rm": want fleet ls, fleet check or fleet serve'

# help shows only what this version has: fleet is not in it yet, so
# neither are the flags only it reads (they appear with the command);
# report is, with its flags.
run fleet --targets a:1
if [ "$rc" -eq 1 ] && [ -z "$out" ]; then
    for word in "  fleet " --targets --consul --nomad-service; do
        expect_not_in "help: no '$word' while fleet is not in this version" "$usage_text" "$word"
    done
else
    skip "help leaves fleet's flags out" "fleet is in this version"
fi
for word in "  report " --since --prometheus-token-env --prometheus-ca-cert --timeout; do
    expect_in "help: report and its flag $word" "$usage_text" "$word"
done

# --- commands ---------------------------------------------------------------
run nope
expect_rc "unknown command: exit 2" 2
expect_eq "unknown command: nothing on stdout" "$out" ""
IFS= read -r first_line <<<"$err"
want='gpuledger: unknown command "nope"'
expect_eq "unknown command: first line starts '$want'" "${first_line:0:${#want}}" "$want"
expect_eq "unknown command: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
expect_in "unknown command: points to the list of commands" "$err" "gpuledger help"

run nope --demo
expect_rc "unknown command with flags: exit 2" 2

run --demo
expect_rc "no command: ls (exit 0)" 0
expect_in "no command: ls output" "$out" "gpuledger · gpu-demo-01 · 5 GPU(s)"
run ls --demo
expect_in "ls --demo: same header" "$out" "gpuledger · gpu-demo-01 · 5 GPU(s)"

# --- flags ------------------------------------------------------------------
usage_error "unknown flag" ls --bogus
expect_in "unknown flag: names it" "$err" "bogus"
usage_error "a misspelt flag" ls --demoo
expect_eq "a misspelt flag: named with its two dashes, the closest flag offered" "$err" \
    "gpuledger: unknown flag --demoo (did you mean --demo?)"
usage_error "a misspelt flag, one dash" check -jsn
expect_eq "... offered with two dashes too" "$err" "gpuledger: unknown flag --jsn (did you mean --json?)"
usage_error "a misspelt command" chek --demo
expect_in "a misspelt command: the closest offered" "$err" 'unknown command "chek" (did you mean check?)'
usage_error "a flag the command does not read" ls --demo --exit-on bad
expect_eq "... names the commands that take it" "$err" "gpuledger: --exit-on is not a flag of ls: check and fleet check take it"
usage_error "version takes no --json" version --json
expect_in "... and says who does" "$err" "--json is not a flag of version: ls, check, fleet ls, fleet check, report and rules take it"
usage_error "unknown flag, single dash" check -nope
usage_error "flags before the command" --json check
expect_in "flags before the command: says the command comes first" "$err" "the command comes first"
expect_in "flags before the command: names the word" "$err" "check"
usage_error "stray argument" check extra
expect_in "stray argument: names it" "$err" "extra"
expect_in "stray argument: says the command comes first" "$err" "the command comes first"
usage_error "stray argument after flags" check --demo extra
usage_error "flag without its value" check --exit-on
usage_error "bool with a bad value" ls --json=maybe
usage_error "int with a bad value" check --encoder-max lots
usage_error "duration without a unit" check --interval 15

# Go flag syntax that must work: -x and --x, --x=v and --x v, --bool=false,
# negative ints.
run check -demo -exit-on bad
expect_rc "single-dash flags: check --demo --exit-on bad is 3 (demo worst is ERROR)" 3
run check --demo --exit-on=error
expect_rc "--flag=value form" 3
run check --demo --json=false
expect_rc "--json=false: exit 0" 0
expect_in "--json=false: text output" "$out" "findings:"
run check --demo --encoder-max -1 --json
expect_rc "negative int value" 0
expect_not_in "--encoder-max -1: no encoder finding" "$out" "encoder-saturated"
run fleet ls --targets 127.0.0.1:1 --timeout=1m30s
expect_rc "duration 1m30s accepted" 0
run fleet ls --targets 127.0.0.1:1 --timeout 500ms
expect_rc "duration 500ms accepted" 0

# --- validation -------------------------------------------------------------
for value in Bad fatal WARN; do
    usage_error "--exit-on $value" check --exit-on "$value"
    expect_in "--exit-on $value: names the value" "$err" "$value"
done
usage_error "--exit-on ''" check --demo --exit-on ""
expect_eq "--exit-on '': says what it wants" "$err" 'gpuledger: --exit-on "": want warn, bad or error'
usage_error "fleet check --exit-on=" fleet check --targets a:1 --exit-on=
# A user or password in an address would be printed wherever the address is:
# refused before anything is asked, the secret not in the message.
usage_error "report --prometheus with a password" report --prometheus "http://ops:pa55word@127.0.0.1:9090"
expect_eq "report --prometheus with a password: the address masked" "$err" \
    "gpuledger: --prometheus http://…@127.0.0.1:9090: no user or password in an address: an address is shown in errors and output; a token goes in the variable --prometheus-token-env names"
NOMAD_ADDR="http://ops:pa55word@127.0.0.1:4646" usage_error "NOMAD_ADDR with a password" check
expect_in "NOMAD_ADDR with a password: names the variable" "$err" "gpuledger: NOMAD_ADDR=http://…@127.0.0.1:4646: "
expect_not_in "NOMAD_ADDR with a password: not shown" "$err" "pa55word"
for value in 0 -5s 0s; do
    usage_error "serve --interval $value" serve --interval "$value"
    usage_error "fleet serve --interval $value" fleet serve --targets 127.0.0.1:1 --interval "$value"
done
usage_error "--timeout 0" fleet ls --targets 127.0.0.1:1 --timeout 0
# A --listen of a shape serve cannot listen on, refused before anything
# starts: every such case of the list the C side is tested on.
while IFS= read -r line; do
    case $line in
        bad | "bad "*) listen=${line#bad} listen=${listen# } ;;
        *) continue ;;
    esac
    usage_error "serve --listen '$listen'" serve --demo --listen "$listen"
    expect_eq "serve --listen '$listen': says the shapes it takes" "$err" \
        "gpuledger: --listen \"$listen\": want :PORT, HOST:PORT or [IPV6]:PORT"
    usage_error "fleet serve --listen '$listen'" fleet serve --targets a:1 --listen "$listen"
done <"$SRC/testdata/listen.txt"
usage_error "--rules relative/dir" check --demo --rules relative/dir
expect_in "--rules relative: names it" "$err" "relative/dir"
usage_error "--scripts relative" check --demo --scripts lua
usage_error "--rules /nonexistent" check --demo --rules /nonexistent
expect_in "--rules /nonexistent: names the directory" "$err" "/nonexistent"
usage_error "--rules names a file" check --demo --rules /etc/hostname
GPULEDGER_RULES=/nonexistent usage_error "GPULEDGER_RULES=/nonexistent" check --demo
usage_error "--demo with --replay" ls --demo --replay /dev/null
# rules runs the rules on a node only with --check.
usage_error "rules --demo without --check" rules --demo
expect_eq "rules --demo: says it needs --check" "$err" \
    "gpuledger: rules --demo needs --check: only rules --check runs the rules on a node"
usage_error "rules --replay without --check" rules --replay /dev/null
expect_eq "rules --replay: says it needs --check" "$err" \
    "gpuledger: rules --replay needs --check: only rules --check runs the rules on a node"

# The default site directory may be missing: no site rules, no error.
if [ -e /etc/gpuledger/rules.d ]; then
    skip "default rules dir missing is fine" "/etc/gpuledger/rules.d exists on this machine"
else
    run check --demo
    expect_rc "default /etc/gpuledger/rules.d missing: check runs" 0
    expect_in "default rules dir missing: findings printed" "$out" "21 findings"
fi
mkdir "$WORK/empty-rules"
run check --demo --rules "$WORK/empty-rules"
expect_rc "an existing empty --rules dir is fine" 0

# fleet and report requirements (parse time, exit 2).
usage_error "fleet with nothing to discover" fleet
usage_error "fleet ls with nothing to discover" fleet ls
usage_error "fleet rm" fleet rm --targets a:1
expect_in "fleet rm: names the sub-command" "$err" "rm"
usage_error "fleet ls x" fleet ls x --targets a:1
# Each fleet sub-command takes its own flags only, as each command does.
usage_error "fleet ls --exit-on" fleet ls --exit-on bad --targets a:1
expect_eq "... names the flag, the sub-command and who takes it" "$err" \
    "gpuledger: --exit-on is not a flag of fleet ls: check and fleet check take it"
usage_error "fleet check --listen" fleet check --listen :1 --targets a:1
expect_eq "... names the flag, the sub-command and who takes it" "$err" \
    "gpuledger: --listen is not a flag of fleet check: serve and fleet serve take it"
usage_error "fleet serve --json" fleet serve --json --targets a:1
expect_eq "... names the flag, the sub-command and who takes it" "$err" \
    "gpuledger: --json is not a flag of fleet serve: ls, check, fleet ls, fleet check, report and rules take it"
usage_error "serve --exit-on" serve --exit-on bad
expect_eq "... as a command refuses another's" "$err" \
    "gpuledger: --exit-on is not a flag of serve: check and fleet check take it"
usage_error "fleet --timeout 0" fleet --targets a:1 --timeout 0
for target in "" " , " gpud ftp://gpud:1; do
    usage_error "fleet --targets '$target'" fleet --targets "$target"
done
# Each entry whole: host:port or http(s)://host:port and nothing around it,
# the port 1 to 65535.
for target in host:99999 host: :80 host:0 "junk host:80" host:80/ledger host:80x xhttp://host:80; do
    usage_error "fleet --targets '$target'" fleet --targets "a:1,$target"
    expect_eq "fleet --targets '$target': names the entry and the shape" "$err" \
        "gpuledger: target \"$target\": want host:port or http(s)://host:port, the port 1 to 65535"
done
usage_error "report without --prometheus" report

finish
