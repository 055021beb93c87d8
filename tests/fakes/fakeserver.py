"""What fake_consul.py and fake_node.py share (standard library only): a
threaded HTTP server on loopback, HTTPS with an optional client CA, the
port written to a file once it listens, and a life of --max-seconds or
until SIGTERM."""

import os
import signal
import ssl
import sys
import threading
from http.server import ThreadingHTTPServer


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    name = "fake"

    def handle_error(self, request, client_address):
        # a failed TLS handshake or a client that went away: one quiet line
        sys.stderr.write("%s: request failed: %s\n" % (self.name, sys.exc_info()[1]))


def add_arguments(parser, tls=True):
    """The flags every fake takes."""
    parser.add_argument("--port-file", required=True, help="written with the port once listening")
    parser.add_argument("--max-seconds", type=float, default=300, help="exit after this long")
    if tls:
        parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
        parser.add_argument("--tls-key", help="the certificate's key (PEM)")
        parser.add_argument("--client-ca", help="require a client certificate signed by this CA")


def run(name, handler, args, host="127.0.0.1"):
    """Serves handler on host (any free port) as args say; returns 0 at the end."""
    server = Server((host, 0), handler)
    server.name = name
    if getattr(args, "tls_cert", None):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.client_ca)
        # the handshake happens in the handler thread, so a client that never
        # completes one cannot block accept()
        server.socket = context.wrap_socket(server.socket, server_side=True,
                                            do_handshake_on_connect=False)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                     daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, args.port_file)
    stop.wait(args.max_seconds)
    server.shutdown()
    return 0
