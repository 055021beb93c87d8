"""What the HTTP fakes share (standard library only): a threaded server on
loopback whose failed requests are one quiet line, the flags every fake
takes, HTTPS with an optional client CA, the port written to a file once
it listens, and a life of --max-seconds or until SIGTERM or SIGINT."""

import base64
import json
import os
import signal
import ssl
import sys
import threading
from http.server import ThreadingHTTPServer


# Where {token_splits} cuts the token: after its first byte, at a fifth, a
# third, two thirds and four fifths of it, and before its last byte.
SPLIT_FRACTIONS = (0.2, 1 / 3, 2 / 3, 0.8)


def token_splits(token):
    """The token cut in two at each point a server might cut it: one
    "<left> <right>" per cut, joined by "; "."""
    cuts = sorted({1, len(token) - 1} | {int(len(token) * f) for f in SPLIT_FRACTIONS})
    return "; ".join("%s %s" % (token[:cut], token[cut:]) for cut in cuts if 0 < cut < len(token))


def json_go(text):
    """text as a JSON string's contents the way Go's encoding/json writes it:
    HTML-safe, & < > U+2028 U+2029 as \\uXXXX."""
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    for char in "&<>\u2028\u2029":
        escaped = escaped.replace(char, "\\u%04x" % ord(char))
    return escaped


def json_every_char(text):
    """text as a JSON string's contents with every character as \\uXXXX (a
    UTF-16 surrogate pair past U+FFFF), hex digits in upper case."""
    units = text.encode("utf-16-be")
    return "".join("\\u%02X%02X" % (units[i], units[i + 1]) for i in range(0, len(units), 2))


def echo_token(template, token):
    """template with the token a server echoes put in: {token} as sent, and the
    forms a server may echo it in ({token_upper}, {token_url}: every byte as %XX,
    {token_json}: a JSON string's escapes with / as \\/, {token_json_go}: as Go
    writes it, & < > U+2028 U+2029 as \\uXXXX, {token_json_ascii}: as Python
    writes it, past ASCII as \\uXXXX, {token_json_u}: every character as
    \\uXXXX, {token_b64}: base64 of "user:<token>",
    {token_half1} and {token_half2}: its two halves, {token_splits}: it cut in
    two at several points, token_splits)."""
    half = len(token) // 2
    forms = {
        "{token_upper}": token.upper(),
        "{token_url}": "".join("%%%02X" % b for b in token.encode("utf-8")),
        "{token_json}": json.dumps(token)[1:-1].replace("/", "\\/"),
        "{token_json_go}": json_go(token),
        "{token_json_ascii}": json.dumps(token)[1:-1],
        "{token_json_u}": json_every_char(token),
        "{token_b64}": base64.b64encode(("user:" + token).encode("utf-8")).decode("ascii"),
        "{token_half1}": token[:half],
        "{token_half2}": token[half:],
        "{token_splits}": token_splits(token),
        "{token}": token,
    }
    for name, value in forms.items():
        template = template.replace(name, value)
    return template


class Server(ThreadingHTTPServer):
    """A threaded HTTP server; name says which fake in its stderr lines."""
    daemon_threads = True
    allow_reuse_address = True
    name = "fake"

    def handle_error(self, request, client_address):
        # a failed TLS handshake or a client that went away: one quiet line
        sys.stderr.write("%s: request failed: %s\n" % (self.name, sys.exc_info()[1]))


def add_tls_arguments(parser):
    """The TLS flags of a fake that can speak HTTPS (see use_tls)."""
    parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", help="the certificate's key (PEM)")
    parser.add_argument("--client-ca", help="require a client certificate signed by this CA")


def add_arguments(parser, tls=True):
    """The flags every fake served by run() takes."""
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    parser.add_argument("--max-seconds", type=float, default=300, help="exit after this long")
    if tls:
        add_tls_arguments(parser)


def write_port_file(path, value):
    """Writes value to path through a rename, so a reader never sees half."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % value)
    os.replace(tmp, path)


def use_tls(server, cert, key, client_ca=None):
    """Makes server speak TLS 1.2+ with cert and key, requiring a client
    certificate signed by client_ca when given. The handshake happens in
    the handler thread, so a client that never completes one cannot block
    accept()."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca)
    server.socket = context.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)


def serve_all(servers, max_seconds, listening):
    """Serves every server on its own thread, calls listening() once they
    are, and returns (servers shut down and closed) on SIGTERM, SIGINT or
    after max_seconds. Requests still hanging on purpose do not delay it."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    for server in servers:
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                         daemon=True).start()
    listening()
    stop.wait(max_seconds)
    for server in servers:
        server.shutdown()
        server.server_close()


def serve_tcp(server, args):
    """Serves one TCP server as its fake's args say (--tls-cert, --tls-key,
    --client-ca, --port-file, --max-seconds) until serve_all() returns."""
    if getattr(args, "tls_cert", None):
        use_tls(server, args.tls_cert, args.tls_key, args.client_ca)
    serve_all([server], args.max_seconds,
              lambda: write_port_file(args.port_file, server.server_address[1]))


def run(name, handler, args, host="127.0.0.1", port=0):
    """Serves handler on host and port (0: any free one) as args say
    (add_arguments); returns 0 at the end."""
    server = Server((host, port), handler)
    server.name = name
    serve_tcp(server, args)
    return 0


def main(fake_main):
    """Runs a fake's main() as the program: its status, 0 on Ctrl-C."""
    try:
        sys.exit(fake_main())
    except KeyboardInterrupt:
        sys.exit(0)
