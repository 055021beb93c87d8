#!/usr/bin/env python3
"""A fake Prometheus HTTP API for report's error cases (standard library only).

Serves GET <prefix>/api/v1/query in the real API's shape (docs/sources.md#prometheus-report). The route prefix picks the behaviour, as a --web.route-prefix
would pick a server:

    /ok          success: the --answers file's vector for each query
                 ("jobs" for gpuledger_job_gpu_seconds_total, "nodes" for
                 gpuledger_gpu_state_seconds_total, "unreserved" for
                 gpuledger_tenant_gpu_seconds_total, "slices" for
                 gpuledger_mig_job_gpu_seconds_total)
    /empty       success with "result": []
    /bad_data    400 {"status":"error","errorType":"bad_data",...}
    /execution   422 errorType execution
    /timeout     503 errorType timeout
    /internal    500 errorType internal
    /starting    503 "Service Unavailable" in plain text (WAL replay)
    /auth        401 "Unauthorized" in plain text unless the request carries
                 "Authorization: Bearer <value of $FAKE_PROMETHEUS_TOKEN>"
                 (then as /ok)
    /auth_echo   as /auth, but the 401's body repeats the bearer token sent,
                 in every form fakeserver.echo_token makes (a proxy in front
                 that echoes what it refused)
    /html        200 text/html: a login page of a proxy
    /redirect    302 to the same request under /ok (a proxy sending the
                 client elsewhere)
    /truncated   /ok's answer cut short in the middle (as a proxy that gave up
                 would pass it on), with the Content-Length of what is sent
    /garbage     /ok's answer with a bare word between its first two series
    /huge        200 application/json, 100 MB, no Content-Length
    /slow        answers after --slow-seconds

Any other path: 404 "404 page not found". Other methods: 405.

    fake_prometheus.py --port-file FILE [--answers FILE.json] [--log FILE]
                       [--slow-seconds N] [--max-seconds N]
                       [--tls-cert PEM --tls-key PEM [--client-ca PEM]]
"""

import argparse
import json
import os
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

import fakeserver

JSON_TYPE = "application/json"
TEXT_PLAIN = "text/plain; charset=utf-8"
ERRORS = {
    "bad_data": (400, "invalid parameter \"query\": 1:5: parse error: unclosed left parenthesis"),
    "execution": (422, "vector cannot contain metrics with the same labelset"),
    "timeout": (503, "query timed out in expression evaluation"),
    "internal": (500, "write /prometheus/wal/00000012: no space left on device"),
}
# The answer of the --answers file for each counter a query asks about.
ANSWERS = {
    "gpuledger_job_gpu_seconds_total": "jobs",
    "gpuledger_gpu_state_seconds_total": "nodes",
    "gpuledger_tenant_gpu_seconds_total": "unreserved",
    "gpuledger_mig_job_gpu_seconds_total": "slices",
}
HTML = ("<!DOCTYPE html>\n<html><head><title>Sign in</title></head>"
        "<body><form method=\"post\">Sign in to continue</form></body></html>\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answers = {}
    log_path = None
    slow_seconds = 60.0
    lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        pass

    def record(self, query):
        """Appends the request to the log: path, query names, header NAMES only."""
        if not self.log_path:
            return
        entry = {"method": self.command, "path": urllib.parse.urlsplit(self.path).path,
                 "params": sorted(query), "headers": sorted(self.headers.keys()),
                 "query": query.get("query", [""])[0]}
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def send_raw(self, status, body, content_type, extra=None):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status, value):
        self.send_raw(status, json.dumps(value), JSON_TYPE)

    def success(self, result):
        self.send_json(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def answer(self, query):
        """The configured vector for the query; stamped with the time now."""
        counter = re.search(r"increase\((\w+)\[", query)
        name = ANSWERS.get(counter.group(1) if counter else "", "")
        now = round(time.time(), 3)
        return [{"metric": s["metric"], "value": [now, s["value"]]} for s in self.answers.get(name, [])]

    def huge(self):
        """100 MB of valid-looking JSON, chunked, as a runaway answer would be."""
        self.send_response(200)
        self.send_header("Content-Type", JSON_TYPE)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        series = json.dumps({"metric": {"node": "n" * 64, "state": "held"}, "value": [0, "1"]}) + ","
        chunk = ('{"status":"success","data":{"resultType":"vector","result":[' + series * 2000).encode()
        sent = 0
        try:
            while sent < 100 * 1000 * 1000:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
                chunk = (series * 2000).encode()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading at its cap: what the test wants

    def do_GET(self):
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query)
        self.record(query)
        prefix, _, rest = split.path.lstrip("/").partition("/")
        if rest != "api/v1/query":
            self.send_raw(404, "404 page not found\n", TEXT_PLAIN)
            return
        promql = query.get("query", [""])[0]
        if prefix == "ok":
            self.success(self.answer(promql))
        elif prefix == "empty":
            self.success([])
        elif prefix in ERRORS:
            status, text = ERRORS[prefix]
            self.send_json(status, {"status": "error", "errorType": prefix, "error": text})
        elif prefix == "starting":
            self.send_raw(503, "Service Unavailable", TEXT_PLAIN, {"X-Prometheus-Stopping": "false"})
        elif prefix in ("auth", "auth_echo"):
            sent = self.headers.get("Authorization") or ""
            want = "Bearer " + os.environ.get("FAKE_PROMETHEUS_TOKEN", "")
            if sent == want and want != "Bearer ":
                self.success(self.answer(promql))
            elif prefix == "auth_echo":
                template = "Unauthorized: {token_splits}; {token} {token_upper} {token_url} {token_json} {token_b64}\n"
                body = fakeserver.echo_token(template, sent.removeprefix("Bearer "))
                self.send_raw(401, body, TEXT_PLAIN, {"WWW-Authenticate": "Basic"})
            else:
                self.send_raw(401, "Unauthorized\n", TEXT_PLAIN, {"WWW-Authenticate": "Basic"})
        elif prefix in ("truncated", "garbage"):
            text = json.dumps({"status": "success", "data": {"resultType": "vector", "result": self.answer(promql)}})
            if prefix == "truncated":
                text = text[:len(text) // 2]
            else:
                text = text.replace("}, {", "}, garbage, {", 1)
            self.send_raw(200, text, JSON_TYPE)
        elif prefix == "html":
            self.send_raw(200, HTML, "text/html; charset=utf-8")
        elif prefix == "redirect":
            self.send_raw(302, "", TEXT_PLAIN, {"Location": "/ok" + self.path[len("/redirect"):]})
        elif prefix == "huge":
            self.huge()
        elif prefix == "slow":
            time.sleep(self.slow_seconds)
            self.success([])
        else:
            self.send_raw(404, "404 page not found\n", TEXT_PLAIN)

    def do_not_allowed(self):
        self.send_raw(405, "Method Not Allowed\n", TEXT_PLAIN)

    do_POST = do_PUT = do_DELETE = do_not_allowed


class Server(fakeserver.Server):
    name = "fake_prometheus"


def main():
    parser = argparse.ArgumentParser(description="fake Prometheus query API")
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    parser.add_argument("--answers", help='JSON {"jobs": [{metric, value}], "nodes": [...]}')
    parser.add_argument("--log", help="append one JSON line per request (no header values)")
    parser.add_argument("--slow-seconds", type=float, default=60, help="how long /slow waits")
    parser.add_argument("--max-seconds", type=float, default=300, help="exit after this long")
    fakeserver.add_tls_arguments(parser)
    args = parser.parse_args()

    if args.answers:
        with open(args.answers, encoding="utf-8") as f:
            Handler.answers = json.load(f)
    Handler.log_path = args.log
    Handler.slow_seconds = args.slow_seconds
    fakeserver.serve_tcp(Server(("127.0.0.1", 0), Handler), args)
    return 0


if __name__ == "__main__":
    fakeserver.main(main)
