"""Many visitors at once (loopback only, bounded): isolation, limits, bind address, API fuzzing.

Latency figures are printed for the README's "Running for a class" section, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import httpx
import pytest
from app_server import ROOT, fast_model_id, free_port, launched_app
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from settings_fuzz import all_settings

from opttree.config import SETTING_NAMES, SETTINGS
from opttree.trace_file import validate_trace

gradio_client = pytest.importorskip("gradio_client")
from gradio_client.exceptions import AppError  # noqa: E402 (after the importorskip above)

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


PROMPTS = st.one_of(st.just("Say hi."), st.text(max_size=40), st.just(""), st.just("x" * 100_000),
                   st.just("\x00\ufffd<script>\u202e"))   # (lone surrogates cannot be sent as JSON)
# Short runs only: max_new_tokens' accepted edge 2048 would decode for minutes on this CPU.
SHORT = dict(max_new_tokens=[1, 2])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=PROMPTS, values=all_settings(everyday=dict(nodes=[4], max_depth=[3]), only=SHORT, json_only=True))
def test_api_fuzz_answers_cleanly(app, prompt, values):
    """Every setting at its edges, outside them and as junk, sent straight to /generate: a finished
    trace, or an error titled bad_input with a clear message; never an internal error."""
    url, log = app
    client = gradio_client.Client(url, verbose=False)
    try:
        trace = client.predict(model=fast_model_id(), prompt=prompt, **values, api_name="/generate")
    except AppError as exc:   # the server's gr.Error: title = the run's kind
        event("bad_input")
        assert exc.title == "bad_input", (prompt[:40], values, exc.title, exc.message)
        assert exc.message.strip() and len(exc.message) < 2000 and "Traceback" not in exc.message
    else:
        event("finished")
        validate_trace(trace)
        assert 1 <= len(trace["output_ids"]) <= values["max_new_tokens"]
    assert "run failed" not in log.read_text(), "the server logged an internal error"


# The target repeats the word for all 2,048 tokens (about 90 s on a 2-core CPU). A prompt it answers
# briefly would end on its own before a busy machine let the test cancel it, and nothing would close.
LONG_RUN_PROMPT = "Repeat the word hello 1000 times."


def long_run_data(model: str) -> list:
    """/generate's inputs for a run far longer than any test waits for (AR, 2048 tokens)."""
    values = {name: SETTINGS[name].default for name in SETTING_NAMES}
    values.update(method="ar", max_new_tokens=2048)
    return [model, LONG_RUN_PROMPT] + [values[n] for n in SETTING_NAMES]


def wait_for_log(log, needle: str, count: int, limit_s: float = 120.0) -> bool:
    """Polls the app's log until `needle` appears `count` times (False after `limit_s`: a bound on
    the wait, generous for a busy machine, not a measurement)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if log.read_text().count(needle) >= count:
            return True
        time.sleep(0.2)
    return False


def test_api_clients_that_go_away_free_their_lane_slots(app):
    """Both lane slots taken by long /generate runs: one client drops its connection, then the other
    cancels its job. Each run is closed at its next step (not after the 180 s time limit) and a
    new visitor's run goes through. The two departures are checked one after the other, so a
    failure names the one whose run stayed open."""
    url, log = app
    closed = "run closed by its reader before it finished"
    before = log.read_text().count(closed)
    client = gradio_client.Client(url, verbose=False)
    data = long_run_data(fast_model_id())
    job = client.submit(*data, api_name="/generate")
    config = httpx.get(url + "config", timeout=30).json()
    fn = next(d.get("id", i) for i, d in enumerate(config["dependencies"]) if d.get("api_name") == "generate")
    session = uuid.uuid4().hex
    joined = httpx.post(url + "gradio_api/queue/join", timeout=30,
                        json={"data": data, "fn_index": fn, "session_hash": session, "event_data": None,
                              "trigger_id": None})
    assert joined.status_code == 200, joined.text
    end = time.monotonic() + 120
    while not job.outputs() and time.monotonic() < end:   # both runs stream before either leaves
        time.sleep(0.2)
    assert job.outputs(), "the gradio_client run never streamed an update"
    with httpx.stream("GET", url + "gradio_api/queue/data", params={"session_hash": session}, timeout=300) as sse:
        for line in sse.iter_lines():   # read until the run streams its first step, then hang up
            if line.startswith("data:") and json.loads(line[5:]).get("msg") == "process_generating":
                break
    assert wait_for_log(log, closed, before + 1), "dropped connection: run not closed\n" + log.read_text()[-3000:]
    assert not job.done(), f"the run to cancel ended by itself: {job.outputs()[-1].get('output_text')!r}"
    job.cancel()
    assert wait_for_log(log, closed, before + 2), "cancelled job: run not closed\n" + log.read_text()[-3000:]
    trace, _ = call(url, "Say hi.", "opt-tree", 0.0, 4)
    assert trace["summary"]["new_tokens"] >= 1


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
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the app did not answer on 127.0.0.1 within 180 s"
                time.sleep(0.5)
        addrs = listening_addresses(port)
        assert addrs == {"0100007F"}, f"listening on {addrs}, expected only 127.0.0.1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
