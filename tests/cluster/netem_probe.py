"""A probe of what netem does to a path, run inside the test pods (``python3 -c <this file> ...``; Debian's
python3-minimal: socket, struct, time, threading only; no json).

``serve``: a UDP echo on 9000 that stamps each probe with when it arrived and when the answer left, and
counts the probes of each run; a TCP sink on 9001 that answers, when the sender closes, the bytes it read and
when the first and the last of them came.

``ping COUNT INTERVAL_MS RUN HOST...``: to each HOST in turn, COUNT probes INTERVAL_MS apart; one line per
answer ``p HOST SEQ SENT_NS ARRIVED_NS ANSWERED_NS BACK_NS`` (the server's two stamps in between: on the same
node, one clock, so both one-way delays are exact), then ``sent HOST N`` and ``server HOST R`` (the probes the
server saw: the loss of each direction apart).

``bulk HOST SECONDS``: as much as TCP carries for SECONDS, then ``bulk BYTES FIRST_NS LAST_NS`` as the
sink saw them (its receiving rate: what a rate limit lets through).
"""

import socket
import struct
import sys
import threading
import time

UDP, TCP = 9000, 9001
PROBE = struct.Struct("!8sIq")  # run, seq, sent (ns)
STAMPS = struct.Struct("!qq")  # arrived, answered (ns)
QUERY = b"?"


def serve() -> None:
    counts: dict[bytes, int] = {}

    def sink() -> None:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", TCP))
        srv.listen(4)
        while True:
            c, _ = srv.accept()
            total, first, last = 0, 0, 0
            while True:
                b = c.recv(262144)
                if not b:
                    break
                last = time.time_ns()
                first = first or last
                total += len(b)
            c.sendall(f"{total} {first} {last}\n".encode())
            c.close()

    threading.Thread(target=sink, daemon=True).start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", UDP))
    print("serving", flush=True)
    while True:
        data, addr = u.recvfrom(2048)
        arrived = time.time_ns()
        if data[:1] == QUERY:  # "?RUN": how many probes of RUN came
            u.sendto(data + b" %d" % counts.get(data[1:9], 0), addr)
            continue
        if len(data) < PROBE.size:
            continue
        run = data[:8]
        counts[run] = counts.get(run, 0) + 1
        u.sendto(data[:PROBE.size] + STAMPS.pack(arrived, time.time_ns()), addr)


def ping(host: str, count: int, interval_ms: float, run: str) -> None:
    """One HOST of ``ping``."""
    tag = run.encode()[:8].ljust(8, b"_")
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect((host, UDP))
    got: dict[int, tuple[int, int, int, int]] = {}
    done = threading.Event()

    def receive() -> None:
        u.settimeout(0.2)
        while not done.is_set():
            try:
                data = u.recv(2048)
            except OSError:
                continue
            back = time.time_ns()
            if len(data) == PROBE.size + STAMPS.size and data[:8] == tag:
                _, seq, sent = PROBE.unpack(data[:PROBE.size])
                arrived, answered = STAMPS.unpack(data[PROBE.size:])
                got[seq] = (sent, arrived, answered, back)

    t = threading.Thread(target=receive)
    t.start()
    start = time.monotonic()
    for seq in range(count):
        u.send(PROBE.pack(tag, seq, time.time_ns()))
        time.sleep(max(0.0, start + (seq + 1) * interval_ms / 1000.0 - time.monotonic()))
    time.sleep(2.0)  # the last answers (the delays tested are well below a second)
    done.set()
    t.join()
    for seq in sorted(got):
        print("p", host, seq, *got[seq])
    print("sent", host, count)
    q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the server's count, asked until answered (loss)
    q.connect((host, UDP))
    q.settimeout(0.5)
    for _ in range(40):
        q.send(QUERY + tag)
        try:
            print("server", host, int(q.recv(64).split()[-1]))
            return
        except OSError:
            continue
    print("server", host, "?")


def bulk(host: str, seconds: float) -> None:
    c = socket.create_connection((host, TCP), timeout=30)
    buf = b"\0" * 65536
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.sendall(buf)
    c.shutdown(socket.SHUT_WR)
    c.settimeout(120)
    answer = b""
    while not answer.endswith(b"\n"):
        b = c.recv(128)
        if not b:
            break
        answer += b
    print("bulk", answer.decode().strip())


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve()
    elif cmd == "ping":
        for i, h in enumerate(sys.argv[5:]):  # a run tag per host: the server counts each apart
            ping(h, int(sys.argv[2]), float(sys.argv[3]), f"{sys.argv[4][:5]}{i:03d}")
    elif cmd == "bulk":
        bulk(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(f"unknown command {cmd} (serve | ping COUNT INTERVAL_MS RUN HOST... | bulk HOST SECONDS)")
