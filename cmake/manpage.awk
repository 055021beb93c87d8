# gpuledger help | awk -v version=V -f manpage.awk > gpuledger.1
# The man page gpuledger(1) from the help text: its first line is the NAME,
# the usage lines the SYNOPSIS (one line each), each "commands:" or "... flags ...:" line
# starts a section, each command or flag a tagged paragraph (a flag's
# description is on the lines below it), any other line at the margin a
# paragraph of its own, and the FILES the package installs close it.
function roff(text) {
    gsub(/\\/, "\\e", text)
    gsub(/-/, "\\-", text)
    sub(/^[.']/, "\\\\&&", text)
    return text
}
NR == 1 {
    sub(/^gpuledger: /, "")
    printf ".TH GPULEDGER 1 \"\" \"gpuledger %s\" \"User Commands\"\n", version
    printf ".SH NAME\ngpuledger \\- %s\n", roff($0)
    next
}
/^$/ { next }
/^usage: / { sub(/^usage: /, ""); printf ".SH SYNOPSIS\n%s\n", roff($0); next }
/^       gpuledger / { sub(/^ +/, ""); printf ".br\n%s\n", roff($0); next }
/^[^ ].*:$/ { sub(/:$/, ""); printf ".SH \"%s\"\n", roff(toupper($0)); next }
/^[^ ]/ { printf ".PP\n%s\n", roff($0); next }
/^  -/ { sub(/^ +/, ""); printf ".TP\n.B %s\n", roff($0); next }
/^  [a-z]+  +/ {
    name = $1
    sub(/^ +[a-z]+ +/, "")
    printf ".TP\n.B %s\n%s\n", name, roff($0)
    next
}
/^  [^ ]/ { sub(/^ +/, ""); printf ".PP\n%s\n", roff($0); next }
{ sub(/^ +/, ""); print roff($0) }
END {
    print ".SH FILES"
    print ".TP\n.B /etc/gpuledger/rules.d\nsite rules (\\-\\-rules)"
    print ".TP\n.B /etc/gpuledger/scripts\nsite scripts (\\-\\-scripts)"
    print ".TP\n.B /etc/default/gpuledger\nthe options of the systemd unit gpuledger.service"
}
