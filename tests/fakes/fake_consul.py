#!/usr/bin/env python3
"""A fake Consul agent for tests (standard library only): the health API
GET /v1/health/service/<service>[?passing=true] in the real shape and with
its ACL behaviour (docs/sources.md#consul-fleet-discovery), from a JSON config file:

    {"token": "SECRET",          # optional: ACLs on; this token reads everything
     "instances": [{"node": "gpu-a", "address": "127.0.0.1", "service_address": "",
                    "service": "gpuledger", "port": 9877, "status": "passing"}]}

With "token" set, a request with another token gets 403 "ACL not found"
(or "refusal_body", where {token} and its forms repeat the token sent:
fakeserver.echo_token), and one with no token gets 200 [] (the anonymous token sees nothing; Consul
filters silently). "status" is a check status: passing, warning or critical.

    fake_consul.py CONFIG.json --port-file FILE [--log FILE] [--max-seconds N]
                   [--tls-cert PEM --tls-key PEM [--client-ca PEM]]
"""

import argparse
import json
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler

import fakeserver


def entry(instance, service_name):
    """One health entry {Node, Service, Checks} for an instance."""
    node, status = instance["node"], instance.get("status", "passing")
    address = instance.get("address", "127.0.0.1")
    service_address = instance.get("service_address", address)
    service_id = "_nomad-task-%s-gpuledger-http" % node
    return {
        "Node": {"ID": "40e4a748-2192-161a-0510-9bf59fe950b5", "Node": node, "Address": address,
                 "Datacenter": "dc1", "TaggedAddresses": {"lan": address, "wan": address},
                 "Meta": {"consul-network-segment": ""}, "CreateIndex": 12, "ModifyIndex": 14},
        "Service": {"ID": service_id, "Service": service_name, "Tags": ["prometheus", "metrics"],
                    "Address": service_address, "Port": instance["port"],
                    "Meta": {"external-source": "nomad"}, "Weights": {"Passing": 1, "Warning": 1},
                    "EnableTagOverride": False, "Kind": "", "Namespace": "default",
                    "CreateIndex": 2561, "ModifyIndex": 2561},
        "Checks": [
            {"Node": node, "CheckID": "serfHealth", "Name": "Serf Health Status",
             "Status": "passing", "Output": "Agent alive and reachable", "ServiceID": "",
             "ServiceName": "", "ServiceTags": [], "Type": "", "Namespace": "default"},
            {"Node": node, "CheckID": "_nomad-check-" + node, "Name": "healthz",
             "Status": status, "Output": "HTTP GET /healthz: " + status, "ServiceID": service_id,
             "ServiceName": service_name, "ServiceTags": ["prometheus", "metrics"],
             "Type": "http", "Namespace": "default"},
        ],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    config = {}
    log_path = None
    lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002
        pass

    def send(self, status, body, content_type=None):
        data = body.encode("utf-8")
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("X-Consul-Index", "2561")
        self.send_header("X-Consul-KnownLeader", "true")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, split):
        if not self.log_path:
            return
        expected = self.config.get("token")
        sent = self.headers.get("X-Consul-Token")
        line = json.dumps({
            "method": self.command, "path": split.path,
            "query": sorted(urllib.parse.parse_qs(split.query, keep_blank_values=True)),
            "x_consul_token_present": sent is not None,
            "x_consul_token_is_expected": bool(expected) and sent == expected,
            "expected_token_in_target": bool(expected) and expected in self.path,
        }, sort_keys=True)
        with self.lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line + "\n")

    def do_GET(self):
        split = urllib.parse.urlsplit(self.path)
        self.record(split)
        prefix = "/v1/health/service/"
        if not split.path.startswith(prefix) or split.path == prefix:
            self.send(404, "")
            return
        service = urllib.parse.unquote(split.path[len(prefix):])
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        passing = query.get("passing", [None])[0]
        if passing not in (None, "", "true", "1", "false", "0"):
            self.send(400, "Invalid value for ?passing")
            return
        expected = self.config.get("token")
        sent = (self.headers.get("X-Consul-Token") or "").strip()
        if expected and sent and sent != expected:
            body = fakeserver.echo_token(self.config.get("refusal_body", "ACL not found"), sent)
            self.send(403, body, "text/plain; charset=utf-8")
            return
        entries = []
        if not expected or sent == expected:
            for instance in self.config.get("instances", []):
                if instance.get("service", "gpuledger") != service:
                    continue
                if passing in ("", "true", "1") and instance.get("status", "passing") != "passing":
                    continue
                entries.append(entry(instance, service))
        self.send(200, json.dumps(entries), "application/json")

    def do_not_allowed(self):
        self.send(405, "method not allowed")

    do_POST = do_PUT = do_DELETE = do_not_allowed


def main():
    parser = argparse.ArgumentParser(description="fake Consul health API")
    parser.add_argument("config", help="JSON config file (see the docstring)")
    parser.add_argument("--log", help="append one JSON line per request (no token values)")
    fakeserver.add_arguments(parser)
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as f:
        Handler.config = json.load(f)
    Handler.log_path = args.log
    return fakeserver.run("fake_consul", Handler, args)


if __name__ == "__main__":
    sys.exit(main())
