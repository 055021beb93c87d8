#!/usr/bin/env bash
# serve follows the kernel log as it grows: each refresh reads only what is
# new (a FILE from where the last one stopped, the journal after its cursor)
# and serves what a full read of the log as it is then gives (`check --json`
# and `ls --json`, the same findings and ledger): lines appended, a line
# written in two parts, the file rotated, truncated and written anew, the
# journal growing and then no longer holding the cursor. Each step waits
# for serve to agree with the full read of that step, which differs from
# the step before.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
out="" err="" rc=0 # what run leaves

export FAKE_SMI_DIR=$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01
mkdir "$WORK/no-rules"
BASE=(--nvidia-smi "$FAKES/nvidia-smi" --no-docker --no-nomad --node follow-node --rules "$WORK/no-rules")
LOG=$WORK/kern.log

# xid_lines FROM N CODE: N dmesg Xid lines of CODE on the H100's bus, the
# first at second FROM, naming three processes in turn.
xid_lines() {
    awk -v from="$1" -v n="$2" -v code="$3" 'BEGIN { for (i = 0; i < n; i++)
        printf "[%12.6f] NVRM: Xid (PCI:0000:00:09): %d, pid=%d, name=job%d, Ch 00000008\n", from + i, code, 1000 + i, i % 3 }'
}

# full_read ARGS...: check --json and ls --json of the log as it is now
# (ARGS: which log), kept in $WORK/full-findings.json and full-ledger.json.
full_read() {
    run check --json "${BASE[@]}" "$@"
    printf '%s\n' "$out" >"$WORK/full-findings.json"
    run ls --json "${BASE[@]}" "$@"
    printf '%s\n' "$out" >"$WORK/full-ledger.json"
}

# serve_agrees: the serve's /findings and /ledger are the full read's
# ("at" left out, and each GPU's stateSince, which only serve's history
# knows).
# shellcheck disable=SC2317 # called through wait_for
serve_agrees() {
    local findings ledger
    findings=$(curl -s --max-time 5 "$URL/findings") && ledger=$(curl -s --max-time 5 "$URL/ledger") || return 1
    ledger=$(jq_lua '(function() for _, entry in ipairs(j.entries) do entry.stateSince = nil end; return j end)()' "$ledger")
    json_same "$findings" "$(cat "$WORK/full-findings.json")" && json_same "$ledger" "$(cat "$WORK/full-ledger.json")"
}

# xid_counts: "code×count" of the full read's Xids on gpu0, sorted.
xid_counts() {
    jq_lua 'table.concat((function() local t = {}; for _, x in ipairs(j.entries[1].xids or {}) do t[#t + 1] = string.format("%dx%d", x.xid, x.count) end; table.sort(t); return t end)(), " ")' \
        "$(cat "$WORK/full-ledger.json")"
}

# --- a FILE ------------------------------------------------------------------
{
    echo "[    0.000000] Linux version 6.1.0 (debian-kernel@lists.debian.org)"
    xid_lines 100 500 13
} >"$LOG"
if start_serve file --listen 127.0.0.1:0 --interval 1s "${BASE[@]}" --kernel-log "$LOG"; then
    full_read --kernel-log "$LOG"
    expect_eq "file: the full read counts the first lines" "$(xid_counts)" "13x500"
    wait_for "file: serve gives what a full read gives" 30 serve_agrees

    xid_lines 600 300 13 >>"$LOG"
    xid_lines 900 200 48 >>"$LOG"
    full_read --kernel-log "$LOG"
    expect_eq "file grown: the full read counts every line" "$(xid_counts)" "13x800 48x200"
    wait_for "file grown: serve gives what a full read gives" 30 serve_agrees

    printf '[ 1200.000000] NVRM: Xid (PCI:0000:00:09): 48, pid=77' >>"$LOG"
    full_read --kernel-log "$LOG"
    expect_eq "half a line: read as a line by the full read" "$(xid_counts)" "13x800 48x201"
    wait_for "half a line: serve gives what a full read gives" 30 serve_agrees
    printf ', name=late, Ch 00000008\n' >>"$LOG"
    full_read --kernel-log "$LOG"
    expect_lua "the line's end: its process named" "$(cat "$WORK/full-ledger.json")" \
        'for _, x in ipairs(j.entries[1].xids) do if x.xid == 48 then return x.count == 201 and table.concat(x.processes, ",") == "job0,job1,job2,late" end end'
    wait_for "the line's end: serve gives what a full read gives" 30 serve_agrees

    mv "$LOG" "$LOG.1"
    xid_lines 2000 7 31 >"$LOG"
    full_read --kernel-log "$LOG"
    expect_eq "rotated: the full read reads the new file" "$(xid_counts)" "31x7"
    wait_for "rotated: serve gives what a full read gives" 30 serve_agrees

    xid_lines 3000 2 13 >"$LOG"
    full_read --kernel-log "$LOG"
    expect_eq "truncated: the full read reads what is left" "$(xid_counts)" "13x2"
    wait_for "truncated: serve gives what a full read gives" 30 serve_agrees

    xid_lines 4000 40 79 >"$LOG"
    full_read --kernel-log "$LOG"
    expect_eq "written anew, longer: the full read reads it" "$(xid_counts)" "79x40"
    wait_for "written anew, longer: serve gives what a full read gives" 30 serve_agrees
    stop_serve TERM
    expect_eq "file: serve exits 0" "$SERVE_RC" 0
else
    fail "serve with a kernel log FILE starts" "$(cat "$SERVE_LOG")"
fi

# --- the journal (the fake journalctl) -----------------------------------------
# journal_entries FROM N: N journal JSON lines of Xid 13, each with its cursor.
journal_entries() {
    awk -v from="$1" -v n="$2" 'BEGIN { for (i = from; i < from + n; i++)
        printf "{\"__CURSOR\":\"s=f011;i=%x;b=6c7c\",\"__REALTIME_TIMESTAMP\":\"%d\",\"_TRANSPORT\":\"kernel\",\"MESSAGE\":\"NVRM: Xid (PCI:0000:00:09): 13, pid=%d, name=job%d, Ch 00000008\"}\n", i, 1795935731000000 + i * 1000, i, i % 3 }'
}
export PATH=$FAKES:$PATH
export FAKE_JOURNAL=$WORK/journal.json
journal_entries 1 300 >"$FAKE_JOURNAL"
: >"$WORK/journal-calls"
if FAKE_JOURNAL_CALLS=$WORK/journal-calls start_serve journal --listen 127.0.0.1:0 --interval 1s "${BASE[@]}" --kernel-log journal; then
    full_read --kernel-log journal
    expect_eq "journal: the full read counts every entry" "$(xid_counts)" "13x300"
    wait_for "journal: serve gives what a full read gives" 30 serve_agrees

    journal_entries 301 50 >>"$FAKE_JOURNAL"
    full_read --kernel-log journal
    expect_eq "journal grown: the full read counts every entry" "$(xid_counts)" "13x350"
    wait_for "journal grown: serve gives what a full read gives" 30 serve_agrees
    expect_in "journal grown: serve asked after the cursor of the last entry it read" "$(cat "$WORK/journal-calls")" \
        "--show-cursor --after-cursor=s=f011;i=12c;b=6c7c"
    expect_eq "journal: serve asked the whole journal once" "$(grep -cvF -- --after-cursor "$WORK/journal-calls")" 1

    journal_entries 1000 4 >"$FAKE_JOURNAL" # vacuumed: the cursor's entry is gone
    full_read --kernel-log journal
    expect_eq "journal vacuumed: the full read counts what is left" "$(xid_counts)" "13x4"
    wait_for "journal vacuumed: serve gives what a full read gives" 30 serve_agrees
    expect_eq "journal vacuumed: the refused cursor, then the whole journal again" \
        "$(grep -cvF -- --after-cursor "$WORK/journal-calls")" 2
    http GET "$URL/healthz"
    expect_eq "journal vacuumed: /healthz 200" "$status" 200
    stop_serve TERM
    expect_eq "journal: serve exits 0" "$SERVE_RC" 0
else
    fail "serve with the journal starts" "$(cat "$SERVE_LOG")"
fi

finish
