#!/usr/bin/env python3
"""The other ends of liburing's examples in test/liburing/examples.sh.

  sink PORT               accept one TCP connection, read until EOF, print
                          "got N bytes sha256 H"
  send PORT N SEED        connect, send N pseudo-random bytes in chunks of
                          random size, close, print "sent N bytes sha256 H"
  udp-client PORT N SEED  send N datagrams of random size (1..3900, what fits the example's 4 KiB buffers with the recvmsg header and the address) one at a
                          time and check that each comes back unchanged
                          (prints "ok ..." and exits 0, or what differed)
"""
import hashlib
import random
import socket
import sys


def sink(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(1)
    srv.settimeout(60)
    conn, _ = srv.accept()
    conn.settimeout(60)
    n, h = 0, hashlib.sha256()
    while True:
        data = conn.recv(65536)
        if not data:
            break
        n += len(data)
        h.update(data)
    conn.close()
    srv.close()
    print(f"{n} bytes sha256 {h.hexdigest()}", flush=True)
    return 0


def send(port, n, seed):
    rnd = random.Random(seed)
    payload = rnd.randbytes(n)
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    sent = 0
    while sent < n:
        k = min(n - sent, rnd.randint(1, 65536))
        s.sendall(payload[sent:sent + k])
        sent += k
    s.close()
    print(f"{n} bytes sha256 {hashlib.sha256(payload).hexdigest()}", flush=True)
    return 0


def udp_client(port, n, seed):
    rnd = random.Random(seed)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    total = 0
    for i in range(n):
        msg = rnd.randbytes(rnd.randint(1, 3900))
        s.sendto(msg, ("127.0.0.1", port))
        try:
            back, _ = s.recvfrom(65536)
        except socket.timeout:
            print(f"datagram {i} ({len(msg)} bytes): no echo within 5 s")
            return 1
        if back != msg:
            print(f"datagram {i}: sent {len(msg)} bytes, got {len(back)} back, not the same")
            return 1
        total += len(msg)
    print(f"ok {n} datagrams, {total} bytes echoed")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "sink":
        return sink(int(argv[2]))
    if len(argv) >= 5 and argv[1] == "send":
        return send(int(argv[2]), int(argv[3]), int(argv[4]))
    if len(argv) >= 5 and argv[1] == "udp-client":
        return udp_client(int(argv[2]), int(argv[3]), int(argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
