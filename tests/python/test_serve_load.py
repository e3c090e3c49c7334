"""A bounded load test on loopback: 16 concurrent clients × 50 requests each (half of
them streamed), small max_tokens. Every request must succeed, and the server's memory
must not grow with the number of requests served.

It reports requests/s, tokens/s, latency and memory to stdout and to
tests/python/out/load-<model>.json. By default it loads a random tiny model (the
server's own overhead dominates); DORY_LOAD_MODEL=DIR runs it against another model,
e.g. models/dory-tiny, as docs/BENCHMARKS.md does, and DORY_LOAD_BACKEND=wgpu runs it on
the GPU backend (the CPU by default).
"""

import json
import os
import statistics
import threading
import time
from pathlib import Path

import requests

OUT = Path(__file__).resolve().parent / "out"

CLIENTS = 16
REQUESTS = 50
MAX_TOKENS = 8
# Bounds on the server process: it may settle after a warm-up, then must stay flat.
GROWTH_LIMIT = 64 << 20


def one_client(url, index, results, errors):
    s = requests.Session()
    for i in range(REQUESTS):
        stream = (index + i) % 2 == 0
        body = {"model": "load", "prompt": f"client {index} request {i}:", "max_tokens": MAX_TOKENS,
                "temperature": 0.7, "seed": index * 1000 + i, "stream": stream}
        t0 = time.perf_counter()
        try:
            r = s.post(f"{url}/v1/completions", json=body, stream=stream, timeout=120)
            if r.status_code != 200:
                errors.append(f"{r.status_code}: {r.text[:200]}")
                continue
            if stream:
                events = [line[6:] for line in r.iter_lines(decode_unicode=True) if line.startswith("data: ")]
                if events[-1] != "[DONE]":
                    errors.append(f"stream did not end with [DONE]: {events[-2:]}")
                    continue
                tokens = sum(1 for e in events[:-1] if '"token":' in e)
            else:
                tokens = r.json()["usage"]["completion_tokens"]
        except requests.RequestException as e:
            errors.append(repr(e))
            continue
        results.append((time.perf_counter() - t0, tokens))


def run_load(url):
    results, errors = [], []
    threads = [threading.Thread(target=one_client, args=(url, c, results, errors)) for c in range(CLIENTS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, results, errors


def test_sixteen_clients_fifty_requests_each(start_server, tiny_model):
    other = os.environ.get("DORY_LOAD_MODEL")
    model = Path(other or tiny_model)
    backend = os.environ.get("DORY_LOAD_BACKEND", "cpu")
    s = start_server(model, "--backend", backend, "--parallel", "2", "--queue", "32")
    # Warm-up: one round of every client, so that allocators and thread pools settle.
    for c in range(CLIENTS):
        requests.post(f"{s.url}/v1/completions", json={"model": "w", "prompt": "warm", "max_tokens": 2}, timeout=60)
    warm = s.memory()
    wall, results, errors = run_load(s.url)
    after = s.memory()
    health = requests.get(f"{s.url}/health", timeout=10).json()

    latencies = sorted(r[0] for r in results)
    tokens = sum(r[1] for r in results)
    report = {
        "model": model.name,
        "backend": backend,
        "clients": CLIENTS,
        "requests": len(results),
        "errors": len(errors),
        "max_tokens": MAX_TOKENS,
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(results) / wall, 1),
        "tokens_per_s": round(tokens / wall, 1),
        "latency_p50_ms": round(statistics.median(latencies) * 1e3, 1) if latencies else None,
        "latency_p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))] * 1e3, 1) if latencies else None,
        "rss_warm_mib": round(warm["rss"] / 2**20, 1),
        "rss_after_mib": round(after["rss"] / 2**20, 1),
        "peak_rss_mib": round(after["peak_rss"] / 2**20, 1),
        "server": {k: health[k] for k in ("workers", "served", "cancelled", "failed", "tokens")},
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"load-{model.name}.json").write_text(json.dumps(report, indent=2))
    print("\nload test:", json.dumps(report))

    assert errors == [], f"{len(errors)} failed requests, e.g. {errors[:3]}"
    assert len(results) == CLIENTS * REQUESTS
    # The random model has no end-of-sequence token: every request runs to max_tokens.
    assert tokens == CLIENTS * REQUESTS * MAX_TOKENS or other, f"{tokens} tokens generated"
    assert health["failed"] == 0 and health["busy"] == 0 and health["queued"] == 0
    assert after["rss"] - warm["rss"] < GROWTH_LIMIT, f"memory grew from {warm['rss']} to {after['rss']} bytes"
