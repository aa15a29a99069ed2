#!/usr/bin/python3
"""A hostile local process against a serving Conveyor node, written from the wire protocol
(core/serving/serve_protocol.hpp) alone: for DURATION seconds, several attacks at once, each
in its own thread:
  descriptors  connect, send ask_report with 2 or 3 descriptors, read the refusal, close
  reports      attach as a rank that is taken, then ask_report in a loop without reading
  idle         keep up to 64 connections open that never send a byte
  forged       attach with a forged resume state in a sealed memfd
  garbage      random bytes of random lengths (0 to 2000), a nonzero reserved byte
Prints one JSON line: how many of each it made.

usage: hostile_client.py SOCKET DURATION
"""
import json
import os
import random
import socket
import struct
import sys
import threading
import time

MAGIC = 0x52595643
VERSION = 7
ATTACH, RELEASE, ASK_REPORT = 1, 4, 7


def message(kind, payload=b"", reserved=0):
    return struct.pack("<IHBB", MAGIC, VERSION, kind, reserved) + payload


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(2)
    s.connect(path)
    return s


def sealed_memfd(data):
    fd = os.memfd_create("forged", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    import fcntl
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    return fd


class Attack(threading.Thread):
    def __init__(self, name, path, until, body):
        super().__init__(daemon=True)
        self.name, self.path, self.until, self.body, self.count = name, path, until, body, 0

    def run(self):
        while time.monotonic() < self.until:
            try:
                self.body(self)
                self.count += 1
            except OSError:
                self.count += 1  # the node closed it on us: that is the point


def descriptors(a):
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        with connect(a.path) as s:
            socket.send_fds(s, [message(ASK_REPORT)], [null] * random.choice((2, 3)))
            s.recv(2048)
    finally:
        os.close(null)


def reports(a):
    with connect(a.path) as s:
        s.send(message(ATTACH, struct.pack("<III", 0, 0, 0)))
        for _ in range(2000):
            s.send(message(ASK_REPORT))


def idle(a, held=[]):
    held.append(connect(a.path))
    if len(held) > 64:
        held.pop(0).close()
    time.sleep(0.01)


def forged(a):
    state = b"CVYRESUM" + struct.pack("<IQ", 1, 49) + os.urandom(49) + os.urandom(8)
    fd = sealed_memfd(state)
    try:
        with connect(a.path) as s:
            socket.send_fds(s, [message(ATTACH, struct.pack("<III", 0, 0, len(state)))], [fd])
            s.recv(2048)
    finally:
        os.close(fd)


def garbage(a):
    with connect(a.path) as s:
        if random.random() < 0.5:
            s.send(os.urandom(random.randint(1, 2000)))
        else:
            s.send(message(RELEASE, struct.pack("<IQ", 0, 0), reserved=random.randint(1, 255)))
        s.recv(2048)


def main():
    path, duration = sys.argv[1], float(sys.argv[2])
    until = time.monotonic() + duration
    attacks = [Attack(f.__name__, path, until, f)
               for f in (descriptors, reports, idle, forged, garbage)]
    for a in attacks:
        a.start()
    for a in attacks:
        a.join()
    print(json.dumps({a.name: a.count for a in attacks}))


if __name__ == "__main__":
    main()
