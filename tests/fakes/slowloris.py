#!/usr/bin/env python3
"""A slowloris attacker for tests/cli/serve_attack.sh, on loopback only.

slowloris.py PORT ADDRESSES PER_ADDRESS SECONDS REPORT

Holds PER_ADDRESS connections from each of ADDRESSES loopback source
addresses (127.0.0.2, 127.0.0.3, ...) to 127.0.0.1:PORT for SECONDS: each
sends a request line and then one header byte every two seconds, never
ending its head; a connection the server closes is opened again at once.
Writes to REPORT one line "opened N held_max N closed N longest S": the
connections opened in all, the most held at once, those the server closed,
and the longest any of those lived (seconds)."""
import errno
import selectors
import socket
import sys
import time

port, addresses, per_address, seconds, report = (
    int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
DRIP_EVERY = 2.0

selector = selectors.DefaultSelector()
opened = closed = held_max = 0
longest = 0.0


def open_one(source):
    """Starts a connection from source; returns False when it cannot."""
    global opened
    s = socket.socket()
    s.setblocking(False)
    try:
        s.bind((source, 0))
        err = s.connect_ex(("127.0.0.1", port))
    except OSError:
        s.close()
        return False
    if err not in (0, errno.EINPROGRESS):
        s.close()
        return False
    opened += 1
    # state: source, opened at, next drip at, request line sent
    selector.register(s, selectors.EVENT_READ, [source, time.monotonic(), 0.0, False])
    return True


def drop(key, by_server):
    global closed, longest
    state = key.data
    selector.unregister(key.fileobj)
    key.fileobj.close()
    if by_server:
        closed += 1
        longest = max(longest, time.monotonic() - state[1])
    open_one(state[0])


for a in range(addresses):
    for _ in range(per_address):
        open_one("127.0.0.%d" % (2 + a))

end = time.monotonic() + seconds
while time.monotonic() < end:
    held_max = max(held_max, len(selector.get_map()))
    for key, _ in selector.select(timeout=0.2):
        try:
            data = key.fileobj.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed (or refused) by the server
            drop(key, True)
    now = time.monotonic()
    for key in list(selector.get_map().values()):
        state = key.data
        if now < state[2]:
            continue
        try:
            key.fileobj.send(b"X" if state[3] else b"GET /metrics HTTP/1.1\r\n")
            state[3] = True
            state[2] = now + DRIP_EVERY
        except BlockingIOError:
            pass  # still connecting
        except OSError:
            drop(key, True)

with open(report, "w") as f:
    f.write("opened %d held_max %d closed %d longest %.1f\n" % (opened, held_max, closed, longest))
