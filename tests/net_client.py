#!/usr/bin/env python3
"""A keep-alive HTTP/1.1 client that knows exactly what it sent and received.

net_client.py HOST PORT PATH N [GO_FIFO]: waits for a line on GO_FIFO (so a
profiler can start following this process first), sends N GET requests one
after the other on one connection, reads each response (Content-Length
bodies), and prints JSON: requests, status counts, bytes_sent,
bytes_received (everything it wrote / read on the socket).  Standard library only.
"""
import json
import socket
import sys


def main():
    host, port, path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    if len(sys.argv) > 5:
        with open(sys.argv[5]) as f:
            f.readline()
    s = socket.create_connection((host, port))
    req = ('GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: ember-net-client\r\n\r\n' % (path, host, port)).encode()
    sent = rcvd = 0
    statuses = {}
    buf = b''
    for _ in range(n):
        s.sendall(req)
        sent += len(req)
        while b'\r\n\r\n' not in buf:
            d = s.recv(65536)
            if not d:
                sys.exit('connection closed early')
            rcvd += len(d)
            buf += d
        head, buf = buf.split(b'\r\n\r\n', 1)
        lines = head.decode('latin-1').split('\r\n')
        status = int(lines[0].split()[1])
        length = next(int(l.split(':', 1)[1]) for l in lines[1:] if l.lower().startswith('content-length:'))
        while len(buf) < length:
            d = s.recv(65536)
            if not d:
                sys.exit('connection closed early')
            rcvd += len(d)
            buf += d
        buf = buf[length:]
        statuses[status] = statuses.get(status, 0) + 1
    s.close()
    out = {'requests': n, 'bytes_sent': sent, 'bytes_received': rcvd}
    out.update({'status_%d' % k: v for k, v in statuses.items()})
    print(json.dumps(out))


if __name__ == '__main__':
    main()
