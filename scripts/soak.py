#!/usr/bin/env python3
"""A bounded soak of `dory serve` (docs/RELIABILITY.md): CLIENTS threads send a mix of
whole, streamed, cancelled and malformed requests for SECONDS, while the server's
resident memory is sampled. Prints one JSON object: requests by kind, unexpected
answers, and RSS at the start (after a warm-up), at the end and at its peak.

Usage: scripts/soak.py DORY_BIN MODEL_DIR [--seconds 600] [--clients 16]
Only the standard library: it runs wherever the server does.
"""

import argparse
import http.client
import json
import random
import socket
import subprocess
import threading
import time

LOCK = threading.Lock()

MALFORMED = [
    b"{not json",
    b"[]",
    b'{"model": "m", "prompt": 3}',
    b'{"model": "m", "prompt": "x", "max_tokens": -1}',
    b'{"model": "m", "prompt": "x", "temperature": "hot"}',
    b'{"model": "m", "prompt": [999999999]}',
    b'{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}',
    b'{"model": "m", "prompt": "x", "max_tokens": 100000000}',
]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def post(port, path, body, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def one(port, rng, counts, problems):
    kind = rng.choice(["whole", "whole", "chat", "stream", "stream", "cancel", "malformed"])
    prompt = rng.choice(["Once upon a time", "The king said", "It was a dark", "x" * rng.randint(1, 200)])
    body = {"model": "m", "prompt": prompt, "max_tokens": rng.randint(1, 40), "seed": rng.randint(0, 9)}
    try:
        if kind == "whole":
            status, data = post(port, "/v1/completions", json.dumps(body))
            ok = status == 200 and "choices" in json.loads(data)
        elif kind == "chat":
            chat = {"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 16}
            status, data = post(port, "/v1/chat/completions", json.dumps(chat))
            ok = status == 200
        elif kind == "stream":
            status, data = post(port, "/v1/completions", json.dumps(dict(body, stream=True)))
            ok = status == 200 and data.rstrip().endswith(b"data: [DONE]") and b'"error"' not in data
        elif kind == "cancel":
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            text = json.dumps(dict(body, stream=True, max_tokens=200)).encode()
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(text), text))
            s.recv(256)
            s.close()
            status, ok = 200, True
        else:
            status, data = post(port, "/v1/completions", rng.choice(MALFORMED))
            ok = 400 <= status < 500 and "error" in json.loads(data)
        if status == 503:  # the queue is full: a documented answer, retried by clients
            kind, ok = "busy", True
    except Exception as e:  # noqa: BLE001 - any failure is a finding, reported
        ok, status = False, repr(e)
    with LOCK:
        counts[kind] = counts.get(kind, 0) + 1
        if not ok:
            problems.append(f"{kind}: {status}")


def main():
    a = argparse.ArgumentParser()
    a.add_argument("dory")
    a.add_argument("model")
    a.add_argument("--seconds", type=float, default=600)
    a.add_argument("--clients", type=int, default=16)
    args = a.parse_args()
    server = subprocess.Popen([args.dory, "serve", "--model", args.model, "--backend", "cpu", "--port", "0",
                               "--parallel", "2", "--queue", "64", "--max-context", "512"],
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    port = int(line.split("http://")[1].split()[0].rsplit(":", 1)[1])
    counts, problems, samples = {}, [], []
    stop = time.time() + args.seconds

    def client(seed):
        rng = random.Random(seed)
        while time.time() < stop:
            one(port, rng, counts, problems)

    warm = time.time() + min(30, args.seconds / 10)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    while time.time() < stop:
        if time.time() >= warm:
            samples.append(rss_kib(server.pid))
        time.sleep(1)
    for t in threads:
        t.join()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/health")
    health = json.loads(c.getresponse().read())
    server.terminate()
    server.wait(30)
    print(json.dumps({"seconds": args.seconds, "clients": args.clients, "requests": counts,
                      "unexpected": len(problems), "examples": problems[:5],
                      "rss_mib": {"start": samples[0] / 1024, "end": samples[-1] / 1024,
                                  "peak": max(samples) / 1024},
                      "health": health}, indent=1))


if __name__ == "__main__":
    main()
