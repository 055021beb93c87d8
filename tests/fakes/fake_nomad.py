#!/usr/bin/env python3
"""A fake Nomad agent HTTP API for tests (standard library only).

Serves GET /v1/agent/self, /v1/node/<id>, /v1/node/<id>/allocations and /v1/service/<name>
in the real API's shape and with its error forms (docs/sources.md#nomad),
from a JSON config file. See tests/fakes/README.md for the config format.

    fake_nomad.py CONFIG.json --port-file FILE [--log FILE] [--max-seconds N]
                  [--tls-cert PEM --tls-key PEM [--client-ca PEM]]
"""

import argparse
import copy
import json
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

import fakeserver

TEXT_PLAIN = "text/plain; charset=utf-8"
JSON_TYPE = "application/json"
JWT_500 = ("failed to resolve ACL token: acl token lookup failed: index error: "
           "UUID must be 36 characters")


def default_agent_self(config):
    """The /v1/agent/self body for the configured role (client, server, both)."""
    role = config.get("role", "client")
    node_id = config.get("node_id", "")
    region = config.get("region", "global")
    body = {
        "config": {
            "Region": region, "Datacenter": config.get("datacenter", "dc1"),
            "NodeName": config.get("node_name", "gpu-node-07"), "DataDir": "/opt/nomad/data",
            "Client": {"Enabled": role in ("client", "both"), "NodeClass": config.get("node_class", "gpu"),
                       "NodePool": config.get("node_pool", "default")},
            "Server": {"Enabled": role in ("server", "both")},
            "ACL": {"Enabled": bool(config.get("acl", True))},
            "Version": {"Version": config.get("version", "1.10.5"), "VersionPrerelease": "",
                        "VersionMetadata": "", "Revision": "a3c8d1e"},
        },
        "member": {"Name": "", "Addr": "", "Port": 0, "Tags": None, "Status": "none",
                   "ProtocolMin": 0, "ProtocolMax": 0, "ProtocolCur": 0,
                   "DelegateMin": 0, "DelegateMax": 0, "DelegateCur": 0},
        "stats": {
            "runtime": {"arch": "amd64", "cpu_count": "64", "goroutines": "214",
                        "kernel.name": "linux", "max_procs": "64", "version": "go1.24.6"},
        },
    }
    if role in ("client", "both"):
        body["stats"]["client"] = {
            "node_id": node_id, "known_servers": "10.0.0.11:4647",
            "num_allocations": str(len(config.get("allocations", []))),
            "last_heartbeat": "11.41s", "heartbeat_ttl": "17.79s"}
    if role in ("server", "both"):
        body["member"] = {
            "Name": "srv1." + region, "Addr": "10.0.0.11", "Port": 4648, "Status": "alive",
            "Tags": {"role": "nomad", "region": region, "dc": "dc1", "build": "1.10.5",
                     "id": "0c3f6a2e-9b1d-4e7a-8f00-5d2c1b7e9a44", "rpc_addr": "10.0.0.11",
                     "port": "4647", "raft_vsn": "3", "vsn": "1", "expect": "3"},
            "ProtocolMin": 1, "ProtocolMax": 5, "ProtocolCur": 2,
            "DelegateMin": 2, "DelegateMax": 5, "DelegateCur": 4}
        body["stats"]["nomad"] = {"server": "true", "leader": "true",
                                  "leader_addr": "10.0.0.11:4647", "bootstrap": "false",
                                  "known_regions": "1"}
        body["stats"]["raft"] = {"state": "Leader", "applied_index": "2560"}
        body["stats"]["serf"] = {"members": "1", "failed": "0"}
    return body


class Policy:
    """What a token may do: agent:read, node:read, read-job per namespace."""

    def __init__(self, spec):
        spec = spec or {}
        self.agent_read = bool(spec.get("agent:read", False))
        self.node_read = bool(spec.get("node:read", False))
        self.read_job = list(spec.get("read_job", []))

    def can_read_job(self, namespace):
        return "*" in self.read_job or (namespace or "default") in self.read_job


ALLOW_ALL = Policy({"agent:read": True, "node:read": True, "read_job": ["*"]})


class State:
    def __init__(self, config, log_path):
        self.config = config
        self.log_path = log_path
        self.lock = threading.Lock()
        self.fault_hits = {}

    def take_fault(self, endpoint):
        """The fault configured for endpoint, if it still applies (see "times")."""
        fault = self.config.get("faults", {}).get(endpoint)
        if not fault:
            return None
        with self.lock:
            hits = self.fault_hits.get(endpoint, 0)
            self.fault_hits[endpoint] = hits + 1
        times = fault.get("times")
        if times is not None and hits >= times:
            return None
        return fault

    def log(self, record):
        if not self.log_path:
            return
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None  # set in main

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        pass

    def send_response(self, code, message=None):
        # like Go's net/http: a Date header, no Server header
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    # -- answers -----------------------------------------------------------

    def send_raw(self, status, body, content_type, extra=None):
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_text_error(self, status, text):
        self.send_raw(status, text, TEXT_PLAIN)

    def send_json(self, status, value, pretty, extra=None, fault=None):
        body = json.dumps(value, indent=4 if pretty else None,
                          separators=None if pretty else (",", ":"))
        data = body.encode("utf-8")
        if fault and fault.get("invalid_json"):
            data = b'{"config": {"Region": "glo'
        if fault and fault.get("hang_mid_body"):
            self.send_response(status)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            time.sleep(float(fault.get("hang_seconds", 3600)))
            return
        self.send_raw(status, data, JSON_TYPE, extra)

    def blocking_headers(self):
        index = max([a.get("ModifyIndex", 0) for a in self.state.config.get("allocations", [])]
                    + [int(self.state.config.get("index", 1))])
        return {"X-Nomad-Index": str(index), "X-Nomad-LastContact": "0",
                "X-Nomad-KnownLeader": "true"}

    # -- tokens --------------------------------------------------------------

    def token(self):
        """The request's token (X-Nomad-Token first, then Bearer), trimmed, or ""."""
        value = self.headers.get("X-Nomad-Token")
        if value is not None and value.strip():
            return value.strip()
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer "):].strip()
        return ""

    def policy(self, token):
        """(Policy, None) or (None, the 403 body for an unknown token)."""
        config = self.state.config
        if not config.get("acl", True):
            return ALLOW_ALL, None
        if not token:
            return Policy(config.get("anonymous")), None
        tokens = config.get("tokens", {})
        if token in tokens:
            return Policy(tokens[token]), None
        # "{token}" in the body echoes the token, as some servers do in errors
        return None, fakeserver.echo_token(config.get("unknown_token_body", "Permission denied"), token)

    def log_request(self, code="-", size="-"):  # BaseHTTPRequestHandler hook; we log ourselves
        pass

    def record(self):
        expected = self.state.config.get("expected_token")
        nomad_token = self.headers.get("X-Nomad-Token")
        auth = self.headers.get("Authorization")
        target = self.path
        self.state.log({
            "method": self.command,
            "path": urllib.parse.urlsplit(target).path,
            "query_keys": sorted(urllib.parse.parse_qs(urllib.parse.urlsplit(target).query,
                                                       keep_blank_values=True)),
            "header_names": [name for name in self.headers.keys()],
            "x_nomad_token_present": nomad_token is not None,
            "x_nomad_token_is_expected": bool(expected) and nomad_token is not None
                                         and nomad_token.strip() == expected,
            "authorization_present": auth is not None,
            "authorization_is_expected_bearer": bool(expected) and auth is not None
                                                and auth.strip() == "Bearer " + expected,
            "expected_token_in_target": bool(expected) and expected in target,
        })

    # -- routing ---------------------------------------------------------------

    def do_GET(self):
        self.record()
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        pretty = "pretty" in query
        path = split.path
        parts = path.split("/")
        if path == "/v1/agent/self":
            self.agent_self(pretty)
        elif len(parts) == 5 and parts[1:3] == ["v1", "node"] and parts[4] == "allocations" \
                and parts[3]:
            self.allocations(parts[3], pretty)
        elif len(parts) == 4 and parts[1:3] == ["v1", "node"] and parts[3]:
            self.node(parts[3], pretty)
        elif path == "/v1/service/":
            self.send_text_error(400, "missing service name")
        elif len(parts) == 4 and parts[1:3] == ["v1", "service"]:
            namespace = query.get("namespace", ["default"])[0] or "default"
            self.service(urllib.parse.unquote(parts[3]), namespace, pretty)
        else:
            # the root fall-through: 404 with an empty body
            self.send_raw(404, b"", None)

    def do_not_allowed(self):
        self.record()
        self.send_text_error(405, "Invalid method")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_not_allowed

    def apply_fault(self, fault):
        """Handles the answer-replacing parts of a fault; True when answered."""
        if fault is None:
            return False
        if fault.get("hang_seconds") and not fault.get("hang_mid_body"):
            time.sleep(float(fault["hang_seconds"]))
        if "status" in fault:
            body = fakeserver.echo_token(fault.get("body", ""), self.token())
            content_type = fault.get("content_type", TEXT_PLAIN)
            self.send_raw(int(fault["status"]), body, content_type, fault.get("headers"))
            return True
        return False

    def agent_self(self, pretty):
        fault = self.state.take_fault("agent_self")
        if self.apply_fault(fault):
            return
        config = self.state.config
        token = self.token()
        if config.get("jwt_tokens_500") and token and len(token) != 36:
            self.send_text_error(500, JWT_500)
            return
        policy, denied = self.policy(token)
        if policy is None:
            self.send_text_error(403, denied)
            return
        if not policy.agent_read:
            self.send_text_error(403, "Permission denied")
            return
        body = copy.deepcopy(config["agent_self"]) if "agent_self" in config \
            else default_agent_self(config)
        self.send_json(200, body, pretty, fault=fault)

    def node_reader(self, endpoint):
        """Takes the endpoint's fault and checks node:read: (fault, policy),
        or None when the fault or a 403 has answered already."""
        fault = self.state.take_fault(endpoint)
        if self.apply_fault(fault):
            return None
        policy, _ = self.policy(self.token())
        if policy is None or not policy.node_read:
            self.send_text_error(403, "Permission denied")
            return None
        return fault, policy

    def allocations(self, node_id, pretty):
        reader = self.node_reader("allocations")
        if reader is None:
            return
        fault, policy = reader
        config = self.state.config
        allocs = []
        if node_id == config.get("node_id"):
            allocs = [a for a in config.get("allocations", [])
                      if policy.can_read_job(a.get("Namespace"))]
        self.send_json(200, allocs, pretty, self.blocking_headers(), fault=fault)

    def node(self, node_id, pretty):
        """The Node object (docs/health.md#nomads-device-list): its GPU devices from the config's
        "devices" (null when absent); an unknown id is 404 "node not found"."""
        reader = self.node_reader("node")
        if reader is None:
            return
        fault, _ = reader
        config = self.state.config
        if node_id != config.get("node_id"):
            self.send_text_error(404, "node not found")
            return
        body = {"ID": node_id, "SecretID": "", "Name": config.get("node_name", "gpu-node"),
                "Datacenter": config.get("datacenter", "dc1"),
                "NodeClass": config.get("node_class", "gpu"), "NodePool": config.get("node_pool", "default"),
                "Status": "ready", "SchedulingEligibility": "eligible",
                "Drain": False, "NodeResources": {"Devices": copy.deepcopy(config.get("devices"))},
                "CreateIndex": 12, "ModifyIndex": int(config.get("index", 1))}
        self.send_json(200, body, pretty, self.blocking_headers(), fault=fault)

    def service(self, name, namespace, pretty):
        fault = self.state.take_fault("service")
        if self.apply_fault(fault):
            return
        policy, _ = self.policy(self.token())
        if policy is None or not policy.can_read_job(namespace):
            self.send_text_error(403, "Permission denied")
            return
        services = [s for s in self.state.config.get("services", [])
                    if s.get("ServiceName") == name and s.get("Namespace", "default") == namespace]
        self.send_json(200, services, pretty, self.blocking_headers(), fault=fault)


class Server(fakeserver.Server):
    name = "fake_nomad"


def main():
    parser = argparse.ArgumentParser(description="fake Nomad agent API")
    parser.add_argument("config", help="JSON config file (see README.md)")
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any)")
    parser.add_argument("--log", help="append one JSON line per request (no header values)")
    parser.add_argument("--max-seconds", type=float, default=300, help="exit after this long")
    fakeserver.add_tls_arguments(parser)
    args = parser.parse_args()

    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    Handler.state = State(config, args.log)

    if ":" in args.host:
        Server.address_family = socket.AF_INET6
    if args.client_ca and not args.tls_cert:
        parser.error("--client-ca needs --tls-cert")
    fakeserver.serve_tcp(Server((args.host, args.port), Handler), args)
    return 0


if __name__ == "__main__":
    fakeserver.main(main)
