#!/usr/bin/env python3
"""Many gpuledger nodes that accept a connection and never answer, for the
fleet tests (standard library only): COUNT listening sockets on 127.0.0.1,
each on a port the kernel picks, none ever accepted, so the kernel completes
each handshake into the backlog and the request waits there unread, holding
no descriptor of this process per connection.

    silent_ports.py COUNT --port-file FILE [--max-seconds N]

--port-file is written with the ports, one a line, once every socket
listens (FILE.tmp, then renamed). Exits 0 on SIGTERM or SIGINT, or after
--max-seconds (default 300)."""

import argparse
import os
import resource
import signal
import socket
import sys
import time


def main():
    parser = argparse.ArgumentParser(description="many silent gpuledger nodes")
    parser.add_argument("count", type=int)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--max-seconds", type=float, default=300)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.count + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            print(f"silent_ports: {args.count} sockets need {want} descriptors, the hard limit is {hard}",
                  file=sys.stderr)
            return 1
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    sockets = []
    for _ in range(args.count):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        sockets.append(listener)
    with open(args.port_file + ".tmp", "w", encoding="ascii") as ports:
        ports.write("".join(f"{s.getsockname()[1]}\n" for s in sockets))
    os.rename(args.port_file + ".tmp", args.port_file)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        time.sleep(args.max_seconds)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
