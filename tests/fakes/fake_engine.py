#!/usr/bin/env python3
"""A fake Docker Engine API (or Podman's Docker-compatible API) for tests.

For the bad answers a real dockerd cannot be made to give. Listens on a unix
socket and/or on 127.0.0.1 TCP, serves /_ping, /containers/json and
/containers/<id>/json from a JSON fixture (answers as docs/sources.md#docker-and-podman).
See tests/fakes/README.md for modes and the fixture format.

    fake_engine.py --socket PATH [--port-file FILE] --mode MODE [--fixture FILE]
                   [--log FILE] [--max-seconds N] [--hang-seconds N]
                   [--huge-bytes N] [--chunked]
"""

import argparse
import json
import os
import re
import socketserver
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

import fakeserver

MODES = ("ok", "podman", "500", "invalid-json", "huge", "hang-mid-answer", "drip-inspects", "vanish",
         "null-item", "refuse")
VERSION_PREFIX = re.compile(r"^/v?[0-9.,]+(?=/)")
VANISHED_ID = "dead" * 16
DOCKER_VERSION = "29.0.0"
PODMAN_VERSION = "5.2.0"


def summary(inspect, podman_libpod=False):
    """The /containers/json entry for an inspect object."""
    name = inspect.get("Name", "")
    if podman_libpod:
        name = name.lstrip("/")
    elif not name.startswith("/"):
        name = "/" + name
    config = inspect.get("Config") or {}
    state = inspect.get("State") or {}
    entry = {
        "Id": inspect.get("Id", ""),
        "Names": [name],
        "Image": config.get("Image", ""),
        "ImageID": inspect.get("Image", ""),
        "Command": " ".join([inspect.get("Path", "")] + list(inspect.get("Args") or [])).strip(),
        "Created": 1755681165,
        "Ports": [],
        "Labels": config.get("Labels") or {},
        "State": state.get("Status", "running"),
        "Status": "Up 4 hours",
        "HostConfig": {"NetworkMode": (inspect.get("HostConfig") or {}).get("NetworkMode",
                                                                             "host")},
        "NetworkSettings": {"Networks": {}},
        "Mounts": [],
    }
    if podman_libpod:
        entry["Command"] = [inspect.get("Path", "")] + list(inspect.get("Args") or [])
        entry["Created"] = "2026-08-20T09:12:44.563405Z"
        entry["Pid"] = state.get("Pid", 0)
        entry.update({"Pod": "", "PodName": "", "IsInfra": False, "Exited": False,
                      "ExitCode": 0, "StartedAt": 1755681165, "Namespaces": {}})
    return entry


class State:
    def __init__(self, args, containers):
        self.args = args
        self.containers = containers
        self.lock = threading.Lock()

    def log(self, record):
        if not self.args.log:
            return
        with self.lock:
            with open(self.args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")

    def find(self, ident):
        """The container whose full id, unique id prefix or name is ident."""
        for c in self.containers:
            if c.get("Id") == ident or c.get("Name", "").lstrip("/") == ident.lstrip("/"):
                return c
        matches = [c for c in self.containers if ident and c.get("Id", "").startswith(ident)]
        return matches[0] if len(matches) == 1 else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sys_version = ""
    state = None  # set in main

    @property
    def podman(self):
        return self.state.args.mode == "podman"

    def version_string(self):
        if self.podman:
            return "Libpod/%s (linux)" % PODMAN_VERSION
        return "Docker/%s (linux)" % DOCKER_VERSION

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        pass

    def address_string(self):  # a unix socket peer has no address
        return "local"

    def handle(self):
        if self.state.args.mode == "refuse":
            self.read_request_head()
            self.record_raw()
            return  # the request read, the connection closed: no answer at all
        super().handle()

    def read_request_head(self):
        # Reads up to the blank line that ends the request's head, so that the client has
        # sent all of it before the close: closing earlier races its write ("Broken pipe"
        # instead of "Empty reply"), and which of the two it sees is then chance.
        self.connection.settimeout(10)
        try:
            while self.rfile.readline(65537) not in (b"", b"\r\n", b"\n"):
                pass
        except OSError:
            pass

    def record_raw(self):
        self.state.log({"mode": "refuse", "event": "read and closed"})

    # -- answers -------------------------------------------------------------

    def engine_headers(self):
        if self.podman:
            return {"Api-Version": "1.41", "Libpod-Api-Version": PODMAN_VERSION,
                    "Libpod-Buildah-Version": "1.37.0", "Buildkit-Version": "",
                    "Docker-Experimental": "true"}
        return {"Api-Version": "1.56", "Docker-Experimental": "false", "Ostype": "linux"}

    def send(self, status, body, content_type="application/json", extra=None):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in {**self.engine_headers(), **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error_message(self, status, message, podman_cause=None):
        if self.podman:
            body = {"cause": podman_cause or message, "message": message, "response": status}
        else:
            body = {"message": message}
        self.send(status, json.dumps(body, separators=(",", ":")) + "\n")

    def send_no_such(self, ident):
        if self.podman:
            self.send_error_message(
                404, 'no container with name or ID "%s" found: no such container' % ident,
                "no such container")
        else:
            self.send_error_message(404, "No such container: %s" % ident)

    def send_json(self, value):
        self.send(200, json.dumps(value, separators=(",", ":")) + "\n")

    def send_huge(self):
        size = self.state.args.huge_bytes
        # a valid JSON array: one string padded out to the size asked for
        head, tail = b'[{"Id":"', b'"}]\n'
        pad = max(0, size - len(head) - len(tail))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for name, value in self.engine_headers().items():
            self.send_header(name, value)
        chunked = self.state.args.chunked
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(head) + pad + len(tail)))
        self.end_headers()
        block = b"a" * 65536
        pieces = [head]
        while pad > 0:
            pieces.append(block[:min(pad, len(block))])
            pad -= len(pieces[-1])
        pieces.append(tail)
        try:
            for piece in pieces:
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    self.wfile.write(piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def send_headers_for(self, value):
        """A 200's headers with the full Content-Length of value; returns its body."""
        data = (json.dumps(value, separators=(",", ":")) + "\n").encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for name, val in self.engine_headers().items():
            self.send_header(name, val)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return data

    def send_half_then_hang(self, value):
        data = self.send_headers_for(value)
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        time.sleep(self.state.args.hang_seconds)

    def send_dripping(self, value):
        """The headers, then the body a byte a second."""
        data = self.send_headers_for(value)
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(1)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    # -- routing ---------------------------------------------------------------

    def record(self):
        split = urllib.parse.urlsplit(self.path)
        self.state.log({"method": self.command, "path": split.path,
                        "query_keys": sorted(urllib.parse.parse_qs(split.query,
                                                                   keep_blank_values=True)),
                        "header_names": list(self.headers.keys())})

    def do_GET(self):
        self.record()
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        path = VERSION_PREFIX.sub("", split.path)
        libpod = False
        if self.podman and path.startswith("/libpod/"):
            libpod = True
            path = path[len("/libpod"):]
        mode = self.state.args.mode

        if path == "/_ping":
            if mode == "500":
                self.send_error_message(500, "fake engine: internal error")
                return
            extra = {"Cache-Control": "no-cache, no-store, must-revalidate", "Pragma": "no-cache"}
            if not self.podman:
                extra.update({"Builder-Version": "2", "Swarm": "inactive"})
            self.send(200, "OK", "text/plain; charset=utf-8", extra)
            return

        list_all = query.get("all", ["0"])[0] in ("1", "true", "True")
        match = re.fullmatch(r"/containers/([^/]+)/json", path)
        if path == "/containers/json":
            kind = "list"
        elif match:
            kind = "inspect"
        else:
            self.send_error_message(404, "page not found")
            return

        if mode == "500":
            self.send_error_message(500, "fake engine: internal error")
            return
        if mode == "invalid-json":
            self.send(200, '[{"Id": "aa86eacfb3b3", "Names": ["/trunc')
            return
        if mode == "huge":
            self.send_huge()
            return

        if kind == "list":
            containers = [c for c in self.state.containers
                          if list_all or (c.get("State") or {}).get("Status",
                                                                    "running") == "running"]
            listed = [summary(c, libpod) for c in containers]
            if mode == "vanish":
                listed.append(summary({"Id": VANISHED_ID, "Name": "/vanished",
                                       "Config": {"Image": "busybox"},
                                       "State": {"Status": "running"}}, libpod))
            if mode == "null-item":
                listed.insert(0, None)  # a JSON null before the real entries
            if mode == "hang-mid-answer":
                self.send_half_then_hang(listed)
                return
            self.send_json(listed)
            return

        ident = urllib.parse.unquote(match.group(1))
        container = self.state.find(ident)
        if container is None:
            self.send_no_such(ident)
            return
        body = dict(container)
        if libpod:
            body["Name"] = body.get("Name", "").lstrip("/")
            body["ImageName"] = (body.get("Config") or {}).get("Image", "")
        elif not body.get("Name", "/").startswith("/"):
            body["Name"] = "/" + body["Name"]
        if mode == "hang-mid-answer":
            self.send_half_then_hang(body)
            return
        if mode == "drip-inspects":
            self.send_dripping(body)
            return
        self.send_json(body)

    def do_HEAD(self):
        self.record()
        self.send_response(200 if VERSION_PREFIX.sub("", self.path) == "/_ping" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_not_allowed(self):
        self.record()
        self.send_error_message(405, "method not allowed")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_not_allowed


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        sys.stderr.write("fake_engine: request failed: %s\n" % (sys.exc_info()[1],))


class TcpServer(fakeserver.Server):
    name = "fake_engine"


def main():
    parser = argparse.ArgumentParser(description="fake Docker/Podman Engine API")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--fixture", help='JSON: {"containers": [<inspect object>, ...]}')
    parser.add_argument("--socket", help="unix socket path to listen on (replaced if present)")
    parser.add_argument("--port-file", help="also listen on 127.0.0.1 TCP; its port goes here")
    parser.add_argument("--ready-file", help="written once every listener is up")
    parser.add_argument("--log", help="append one JSON line per request (no header values)")
    parser.add_argument("--max-seconds", type=float, default=300, help="exit after this long")
    parser.add_argument("--hang-seconds", type=float, default=3600,
                        help="how long hang-mid-answer stalls")
    parser.add_argument("--huge-bytes", type=int, default=20 * 1024 * 1024,
                        help="body size in huge mode")
    parser.add_argument("--chunked", action="store_true",
                        help="huge mode: chunked encoding instead of Content-Length")
    args = parser.parse_args()
    if not args.socket and not args.port_file:
        parser.error("give --socket and/or --port-file")

    containers = []
    if args.fixture:
        with open(args.fixture, encoding="utf-8") as f:
            containers = json.load(f).get("containers", [])
    Handler.state = State(args, containers)

    servers = []
    if args.socket:
        if os.path.exists(args.socket):
            os.unlink(args.socket)
        servers.append(UnixServer(args.socket, Handler))
    if args.port_file:
        servers.append(TcpServer(("127.0.0.1", 0), Handler))

    def listening():
        if args.port_file:
            fakeserver.write_port_file(args.port_file, servers[-1].server_address[1])
        if args.ready_file:
            fakeserver.write_port_file(args.ready_file, os.getpid())

    fakeserver.serve_all(servers, args.max_seconds, listening)
    if args.socket:
        try:
            os.unlink(args.socket)
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    fakeserver.main(main)
