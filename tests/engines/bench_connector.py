#!/usr/bin/python3 -B
"""What the vLLM connector adds per step on CPU torch (make bench-engines), each beside its
physical reference measured in the same run:

* the scheduler side's build_connector_meta with 4 running and 1,000 waiting requests, each
  with its claims (the per-step runtime call and the followers' TTUs included), against the
  library's tempo_runtime_step alone on the same snapshot;
* the same engine path with the connector on a tempod (`device = daemon`; the daemon serves
  a uring store): build_connector_meta and the runtime call alone, both through the daemon,
  against the bare in-process tempo_runtime_step, measured alternately in the same run;
* the worker side's load and save per layer (a Llama-3.1-8B layer of one rank: 8 KV heads of
  128, bfloat16, blocks of 16 tokens), against a bare tensor copy of the same bytes: the
  fast tier's bytes index_copy_'d into the paged blocks, and the blocks index_select'ed into
  a host buffer.

Medians of --reps repetitions, with the load average beside them. Prints a table and writes
connector.csv into --out."""

import argparse
import ctypes
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

import torch

import vllm_standin as vs
from tempokv import Retrieval
from tempokv._native import lib
from tempokv import _native_engines as ne

LAYERS, HEADS, DIM, BLOCK, CHUNK, GROUPS = 8, 8, 128, 16, 256, 4


def median_us(samples):
    return statistics.median(samples) / 1e3


TIER = {"fast_tier_bytes": "512MiB", "budget_bytes": "256MiB", "policy": "tempo"}


def engine(directory, max_num_seqs=4, runtime=True, blocks=1024, socket_path=None):
    model = vs.ModelSpec("meta-llama/Llama-3.1-8B-Instruct", LAYERS, HEADS, DIM, torch.bfloat16)
    if socket_path is None:
        tempo = {"device": "uring", "uring.store_path": directory + "/store",
                 "uring.prefault": False, **TIER}
    else:
        tempo = {"device": "daemon", "daemon.socket": socket_path}
    # Costs held at the prior: the bench's steps take microseconds, not a model's milliseconds.
    extra = {"tempo": tempo, "chunk_tokens": CHUNK, "layer_groups": GROUPS, "runtime": runtime,
             "learn_costs": False}
    config = vs.make_vllm_config(model, extra, block_size=BLOCK, max_num_seqs=max_num_seqs)
    kvc = vs.make_kv_cache_config(model, 1, BLOCK, blocks)
    sched = vs.KVConnectorFactory.create_connector(config, vs.KVConnectorRole.SCHEDULER, kvc)
    runner = vs.ModelRunner(config, kvc, 0, "blocks-first")
    return sched, runner, vs.Scheduler(config, kvc, sched, token_budget=1 << 20)


class SchedulerSide:
    """An engine's scheduler side with 4 running and 1,000 waiting requests holding claims,
    and the snapshot its per-step runtime call takes, for the bare call."""

    def __init__(self, directory, socket_path=None):
        self.sched, self.runner, scheduler = engine(directory, socket_path=socket_path)
        self.side, self.step, self.snapshot, self.waiting = prepare(self.sched, self.runner,
                                                                    scheduler)
        self.rt = self.side.feed.runtime._ptr()

    def meta_ns(self):
        t = time.perf_counter_ns()
        self.side.build_connector_meta(self.step)
        spent = time.perf_counter_ns() - t
        self.side.update_connector_output(None)
        return spent

    def bare_ns(self):
        t = time.perf_counter_ns()
        assert lib.tempo_runtime_step(self.rt, ctypes.byref(self.snapshot)) == 0
        return time.perf_counter_ns() - t

    def close(self):
        self.runner.connector.shutdown()
        self.sched.shutdown()


def prepare(sched, runner, scheduler):
    doc = [(i * i * 31 + 17 * i) % 30011 for i in range(CHUNK * 2 + 1)]
    scheduler.add_request(vs.Request("seed", doc))
    while scheduler.running or scheduler.waiting:
        out = scheduler.schedule()
        runner.execute(out, {r.request_id: r.all_token_ids for r in scheduler.running})
        scheduler.update_from_output(out)
    runner.connector.flush()
    for i in range(4):  # four decoding requests hold the slots
        r = vs.Request(f"run{i}", [i + 1] * 64, max_tokens=1 << 20)
        scheduler.add_request(r)
    out = scheduler.schedule()
    runner.execute(out, {r.request_id: r.all_token_ids for r in scheduler.running})
    scheduler.update_from_output(out)
    for i in range(1000):
        scheduler.add_request(vs.Request(f"w{i}", doc))
    side = sched.scheduler
    cached = vs.CachedRequestData([r.request_id for r in scheduler.running], set(),
                                  [[] for _ in scheduler.running],
                                  [None for _ in scheduler.running],
                                  [r.num_computed_tokens for r in scheduler.running],
                                  [r.num_output_tokens for r in scheduler.running])
    step = vs.SchedulerOutput([], cached, {r.request_id: 1 for r in scheduler.running}, 4, set())
    side.build_connector_meta(step)
    side.update_connector_output(None)
    # The library's call alone, on the snapshot the connector gives it.
    run = (ne.RunningSeq * 4)()
    for i, r in enumerate(scheduler.running):
        run[i].prompt_tokens = run[i].computed_tokens = 64
        run[i].tokens_generated = r.num_output_tokens
        run[i].output_tokens = r.sampling_params.max_tokens  # ignore_eos: known, as the feed says
    wait = (ne.WaitingSeq * 1000)()
    tracked = [t for t in side.tracked()
               if t.claims and t.request.status == vs.RequestStatus.WAITING]
    for i, t in enumerate(tracked[:1000]):
        wait[i].prompt_tokens = t.prompt_tokens
        wait[i].cached_tokens = t.held_tokens
        wait[i].claim = t.claims[0][0]
        wait[i].retrieval_bytes = t.retrieval_bytes
    s = ne.Step()
    s.running, s.running_count = run, 4
    s.waiting, s.waiting_count = wait, len(tracked[:1000])
    return side, step, s, len(tracked)


def scheduler_side(directory, reps):
    """build_connector_meta in process against tempo_runtime_step alone, alternating so both
    see the same machine."""
    local = SchedulerSide(directory)
    meta, bare = [], []
    for _ in range(reps):
        meta.append(local.meta_ns())
        bare.append(local.bare_ns())
    local.close()
    return median_us(meta), median_us(bare), local.waiting


def daemon_side(directory, reps):
    """The engine path through tempod (build_connector_meta, and the runtime call alone)
    against the bare in-process runtime call, all three alternating in one run."""
    sock = start_tempod(directory)
    try:
        os.makedirs(directory + "/local")
        local = SchedulerSide(directory + "/local")
        remote = SchedulerSide(directory, socket_path=sock)
        meta, call, bare = [], [], []
        for _ in range(reps):
            meta.append(remote.meta_ns())
            call.append(remote.bare_ns())
            bare.append(local.bare_ns())
        remote.close()
        local.close()
    finally:
        stop_tempod()
    return median_us(meta), median_us(call), median_us(bare), remote.waiting


TEMPOD = []


def start_tempod(directory):
    """A tempod (TEMPOD_PATH) serving a fresh uring store of the same tier in directory."""
    sock = os.path.join(directory, "tempod.sock")
    conf = os.path.join(directory, "tempod.conf")
    with open(conf, "w") as f:
        f.write("device = uring\n" + "".join(f"{k} = {v}\n" for k, v in TIER.items()) +
                f"daemon.socket = {sock}\n[uring]\nstore_path = {directory}/store\n"
                "huge_pages = false\nprefault = false\n")
    TEMPOD.append(subprocess.Popen([os.environ["TEMPOD_PATH"], "--config", conf]))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if TEMPOD[-1].poll() is not None:
            raise SystemExit(f"bench_connector: tempod exited {TEMPOD[-1].returncode}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.connect(sock)
                return sock
        except OSError:
            time.sleep(0.02)
    raise SystemExit("bench_connector: tempod did not serve its socket within 30 s")


def stop_tempod():
    daemon = TEMPOD.pop()
    daemon.send_signal(signal.SIGTERM)
    if daemon.wait(timeout=30) != 0:
        raise SystemExit(f"bench_connector: tempod exited {daemon.returncode}")


def worker_side(directory, reps, tokens):
    """One request's load and save, per layer, against bare copies of the same bytes."""
    sched, runner, scheduler = engine(directory, runtime=False, blocks=2 * tokens // BLOCK + 8)
    conn = runner.connector
    loads, saves, copies_in, copies_out = [], [], [], []
    per_layer = tokens * 2 * HEADS * DIM * 2
    for rep in range(reps):
        doc = [(rep * 7919 + i * i * 31 + 17 * i) % 30011 for i in range(tokens + 1)]
        # Cold: the forward pass computes and saves; time the connector's calls only.
        scheduler.add_request(vs.Request(f"cold{rep}", doc, max_tokens=1))
        out = scheduler.schedule()
        runner._track(out)
        runner.tokens[f"cold{rep}"] = doc
        conn.bind_connector_metadata(out.kv_connector_metadata)
        conn.start_load_kv(None)
        pos = torch.arange(len(doc))
        table = torch.tensor(runner.tables[f"cold{rep}"][0])
        spent = 0
        for i, name in enumerate(runner.names):
            conn.wait_for_layer_load(name)
            runner._write(runner.caches[name], table[pos // BLOCK], pos % BLOCK, i, pos,
                          torch.tensor(doc))
            t = time.perf_counter_ns()
            conn.save_kv_layer(name, runner.caches[name], None)
            spent += time.perf_counter_ns() - t
        t = time.perf_counter_ns()
        conn.wait_for_save()
        spent += time.perf_counter_ns() - t
        saves.append(spent / LAYERS)
        conn.clear_connector_metadata()
        conn.flush()
        scheduler.update_from_output(out)
        # The bare copy out: a layer's blocks into a host buffer.
        ids = table[: tokens // BLOCK]
        host = torch.empty((len(ids), 2, BLOCK, HEADS, DIM), dtype=torch.bfloat16)
        t = time.perf_counter_ns()
        for name in runner.names:
            torch.index_select(runner.caches[name], 0, ids, out=host)
        copies_out.append((time.perf_counter_ns() - t) / LAYERS)
        # Warm: the same prompt loads; staging done before the step (its own cost).
        warm = vs.Request(f"warm{rep}", doc, max_tokens=1)
        scheduler.add_request(warm)
        out = scheduler.schedule()
        for cid in out.kv_connector_metadata.loads[0].claims[0]:
            assert sched.ctx.wait_ready(cid, 30_000_000_000) == Retrieval.READY
        runner._track(out)
        conn.bind_connector_metadata(out.kv_connector_metadata)
        t = time.perf_counter_ns()
        conn.start_load_kv(None)
        for name in runner.names:
            conn.wait_for_layer_load(name)
        conn.wait_for_save()
        loads.append((time.perf_counter_ns() - t) / LAYERS)
        conn.clear_connector_metadata()
        conn.flush()
        assert runner.mismatches(f"warm{rep}", tokens // CHUNK * CHUNK) == []
        scheduler.update_from_output(out)
        # The bare copy in: the same bytes from host memory into the blocks.
        wtable = torch.tensor(runner.tables[f"warm{rep}"][0])[: tokens // BLOCK]
        src = torch.empty((len(wtable), 2, BLOCK, HEADS, DIM), dtype=torch.bfloat16)
        t = time.perf_counter_ns()
        for name in runner.names:
            runner.caches[name].index_copy_(0, wtable, src)
        copies_in.append((time.perf_counter_ns() - t) / LAYERS)
        while scheduler.running or scheduler.waiting:
            out = scheduler.schedule()
            runner.execute(out, {r.request_id: r.all_token_ids for r in scheduler.running})
            scheduler.update_from_output(out)
    conn.shutdown()
    sched.shutdown()
    return (median_us(loads), median_us(copies_in), median_us(saves), median_us(copies_out),
            per_layer)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=2048)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    load = os.getloadavg()[0]
    d = tempfile.mkdtemp(prefix="bench_connector_", dir=args.out)
    try:
        os.makedirs(d + "/a")
        os.makedirs(d + "/b")
        os.makedirs(d + "/c")
        meta, bare, waiting = scheduler_side(d + "/a", args.reps * 3)
        d_meta, d_call, d_bare, d_waiting = daemon_side(d + "/c", args.reps * 3)
        load_us, copy_in, save_us, copy_out, layer_bytes = worker_side(d + "/b", args.reps,
                                                                       args.tokens)
    finally:
        shutil.rmtree(d)
    rows = [("scheduler: build_connector_meta, 4 running + 1000 waiting", meta,
             "tempo_runtime_step alone", bare),
            (f"scheduler through tempod: build_connector_meta, 4 running + {d_waiting} waiting",
             d_meta, "tempo_runtime_step in process", d_bare),
            (f"scheduler through tempod: tempo_runtime_step, {d_waiting} waiting", d_call,
             "tempo_runtime_step in process", d_bare),
            (f"worker: load per layer ({layer_bytes >> 20} MiB)", load_us,
             "index_copy_ of the same bytes", copy_in),
            (f"worker: save per layer ({layer_bytes >> 20} MiB)", save_us,
             "index_select of the same bytes", copy_out)]
    with open(os.path.join(args.out, "connector.csv"), "w") as f:
        f.write("what,us,reference,reference_us,ratio,load_average\n")
        for what, us, ref, ref_us in rows:
            f.write(f"{what},{us:.1f},{ref},{ref_us:.1f},{us / ref_us:.2f},{load:.1f}\n")
    print(f"vLLM connector on CPU torch ({waiting} waiting claims; load average {load:.1f}):")
    for what, us, ref, ref_us in rows:
        print(f"  {what}: {us:.0f} us; {ref}: {ref_us:.0f} us; ratio {us / ref_us:.2f}")


if __name__ == "__main__":
    main()
