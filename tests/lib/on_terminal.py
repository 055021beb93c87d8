#!/usr/bin/env python3
"""Runs a command with its stdout and stderr on a pseudo-terminal of a given
size, as a person's terminal would be, and prints what it wrote (CR LF made
LF). Exits with the command's exit status.

    on_terminal.py COLUMNS COMMAND ARGS...
"""
import fcntl
import os
import pty
import struct
import sys
import termios


def main():
    columns = int(sys.argv[1])
    command = sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:  # the size is set before the command can ask for it
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        os.execvp(command[0], command)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(b"".join(chunks).replace(b"\r\n", b"\n"))
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
