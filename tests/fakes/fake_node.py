#!/usr/bin/env python3
"""A gpuledger node that misbehaves, or answers a fixed /ledger, for the
fleet tests (standard library only). One mode per process:

    silent    accepts the connection and never answers
    drip      sends a 200 head announcing 4096 bytes, then one byte a second
    html      200 text/html: a login page, not a ledger
    garbage   200 application/json that is not JSON
    redirect  302 to another address
    file      200 application/json with the bytes of --file, as they are

    fake_node.py --mode MODE [--file F] [--host 127.0.0.N] [--port N] --port-file FILE [--log FILE]
                 [--max-seconds N]

--log appends one JSON line per request: {"method", "target"} (the request
target as sent, query and all), so a test can tell what the fleet asked.
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

import fakeserver


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "file"
    body = b""
    log_path = None
    lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002
        pass

    def answer(self, status, content_type, data, extra=None):
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self):
        if self.log_path:
            with self.lock, open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"method": self.command, "target": self.path}) + "\n")

    def do_GET(self):
        self.record()
        if self.mode == "silent":
            time.sleep(3600)
        elif self.mode == "drip":
            self.send_response_only(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            for _ in range(4096):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(1)
        elif self.mode == "html":
            self.answer(200, "text/html; charset=utf-8",
                        b"<!DOCTYPE html><html><body><h1>Sign in</h1></body></html>")
        elif self.mode == "garbage":
            self.answer(200, "application/json", b'{"schema":1,"node":"gpug","entries":[{"ind')
        elif self.mode == "redirect":
            self.answer(302, "text/html", b"", {"Location": "http://127.0.0.1:1/ledger"})
        else:
            self.answer(200, "application/json", self.body)


def main():
    parser = argparse.ArgumentParser(description="misbehaving gpuledger node")
    parser.add_argument("--mode", required=True,
                        choices=["silent", "drip", "html", "garbage", "redirect", "file"])
    parser.add_argument("--file")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free one)")
    parser.add_argument("--log", help="append one JSON line per request (method, target)")
    fakeserver.add_arguments(parser, tls=False)
    args = parser.parse_args()
    Handler.mode = args.mode
    Handler.log_path = args.log
    if args.file:
        with open(args.file, "rb") as f:
            Handler.body = f.read()
    return fakeserver.run("fake_node", Handler, args, host=args.host, port=args.port)


if __name__ == "__main__":
    sys.exit(main())
