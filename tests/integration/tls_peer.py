#!/usr/bin/python3
"""TLS peers for the TLS capture tests, on Python's ssl module (the system's libssl).

  tls_peer.py server PORT CERT KEY      HTTPS/1.1 server (keep-alive): / -> 200 "hello",
                                        /status/N -> N, /size/N -> N bytes; prints "listening"
  tls_peer.py client PORT N             N GET requests over one keep-alive connection:
                                        the i-th is /status/404 when i % 5 == 1, /status/500 when
                                        i % 7 == 2, else /size/(100 * i); prints "done N 200:a 404:b 500:c"
"""
import http.client
import http.server
import ssl
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        status, body = 200, b"hello"
        if self.path.startswith("/status/"):
            status, body = int(self.path[8:]), b"status"
        elif self.path.startswith("/size/"):
            body = b"s" * int(self.path[6:])
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def path_of(i):
    if i % 5 == 1:
        return "/status/404"
    if i % 7 == 2:
        return "/status/500"
    return "/size/%d" % (100 * i)


def main():
    if sys.argv[1] == "server":
        port, cert, key = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        print("listening", flush=True)
        srv.serve_forever()
    port, n = int(sys.argv[2]), int(sys.argv[3])
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
    counts = {}
    for i in range(n):
        conn.request("GET", path_of(i))
        r = conn.getresponse()
        r.read()
        counts[r.status] = counts.get(r.status, 0) + 1
    conn.close()
    print("done", n, " ".join("%d:%d" % kv for kv in sorted(counts.items())), flush=True)


if __name__ == "__main__":
    main()
