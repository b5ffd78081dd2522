"""Many visitors at once (loopback only, bounded): isolation, limits, bind address, API fuzzing.

Latency figures are printed for the README's "Running for a class" section, never asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from app_server import ROOT, fast_model_id, free_port, launched_app
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

gradio_client = pytest.importorskip("gradio_client")

# Different prompts and settings per visitor; greedy and seeded sampling both must be reproducible.
JOBS = [
    (p, m, t, n)
    for p, m, t, n in [
        ("Name three colours.", "opt-tree", 0.0, 20), ("What is 2+2?", "chain", 0.0, 8),
        ("Say hello in French.", "binary", 0.0, 12), ("List two fruits.", "eagle-static", 0.0, 25),
        ("Write one word about rain.", "eagle-dynamic", 0.0, 16), ("Count to five.", "opt-tree", 0.8, 30),
        ("Define gravity briefly.", "ar", 0.0, 1), ("Give a synonym for fast.", "opt-tree", 1.0, 10),
    ]
]
NEW_TOKENS = 8


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("load")
    os.environ["OPTTREE_LANE_SLOTS"] = "2"  # two model runs at a time, the rest wait in line
    try:
        with launched_app(folder) as (url, log):
            yield url, log
    finally:
        os.environ.pop("OPTTREE_LANE_SLOTS", None)


def call(url, prompt, method, temperature, nodes):
    client = gradio_client.Client(url, verbose=False)
    start = time.perf_counter()
    trace = client.predict(fast_model_id(), prompt, method, nodes, 6, 0.3, temperature, NEW_TOKENS,
                           api_name="/generate")
    return trace, time.perf_counter() - start


def test_concurrent_visitors_get_solo_results(app):
    url, _ = app
    solo, solo_s = {}, []
    for job in JOBS:
        trace, secs = call(url, *job)
        solo[job] = trace["output_ids"]
        solo_s.append(secs)
    results, latencies, errors = {}, {}, []

    def visitor(job):
        try:
            trace, secs = call(url, *job)
            results[job], latencies[job] = trace["output_ids"], secs
        except Exception as exc:  # collected and reported below
            errors.append(f"{job}: {exc!r}")

    threads = [threading.Thread(target=visitor, args=(job,)) for job in JOBS]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    wall = time.perf_counter() - t0
    assert not errors, errors
    assert results == solo, "a concurrent run differed from the same run done alone"
    lat = sorted(latencies.values())
    waits = sorted(max(0.0, latencies[j] - s) for j, s in zip(JOBS, solo_s))
    print(f"\n[load] {len(JOBS)} concurrent visitors, lane slots 2, {NEW_TOKENS} new tokens each: "
          f"wall {wall:.1f} s; latency p50 {statistics.median(lat):.2f} s, p95 {lat[int(0.95 * (len(lat) - 1))]:.2f} s;"
          f" solo mean {statistics.mean(solo_s):.2f} s; queue wait p50 {statistics.median(waits):.2f} s, "
          f"p95 {waits[int(0.95 * (len(waits) - 1))]:.2f} s")


WEIRD = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9), st.floats(allow_nan=True),
                  st.text(max_size=12))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=st.one_of(st.text(max_size=40), st.just(""), st.just("x" * 100_000), st.just("\x00\udcff<script>")),
       method=st.one_of(st.sampled_from(["opt-tree", "ar", "nope"]), st.text(max_size=8)),
       nodes=WEIRD, max_depth=WEIRD, threshold=WEIRD, temperature=WEIRD)
def test_api_fuzz_answers_cleanly(app, prompt, method, nodes, max_depth, threshold, temperature):
    """Whatever is sent straight to the API: a trace or a clear error, never a dead server."""
    url, _ = app
    client = gradio_client.Client(url, verbose=False)
    try:
        trace = client.predict(fast_model_id(), prompt, method, nodes, max_depth, threshold, temperature, 2,
                               api_name="/generate")
        assert isinstance(trace, dict) and len(trace["output_ids"]) <= 2
    except Exception as exc:  # gradio_client raises AppError with the server's message
        text = str(exc)
        assert "Traceback" not in text and len(text) < 2000 and text.strip()


def test_unknown_model_is_refused_and_server_keeps_working(app):
    url, _ = app
    client = gradio_client.Client(url, verbose=False)
    with pytest.raises(Exception, match="(?i)not (in|on) the|allow|unknown"):
        client.predict("meta-llama/Llama-2-7b-chat-hf", "hi", "opt-tree", 10, 4, 0.5, 0.0, 4, api_name="/generate")
    trace, _ = call(url, "Say hi.", "opt-tree", 0.0, 10)
    assert trace["summary"]["new_tokens"] >= 1


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port` (Linux /proc/net/tcp{,6})."""
    found = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                found.add(addr)
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_binds_loopback_by_default(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "GRADIO_SERVER_NAME"}
    env.update(GRADIO_SERVER_PORT=str(port), PYTHONPATH=str(ROOT), GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except OSError:
                time.sleep(0.5)
        addrs = listening_addresses(port)
        assert addrs == {"0100007F"}, f"listening on {addrs}, expected only 127.0.0.1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
