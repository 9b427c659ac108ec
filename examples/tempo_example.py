#!/usr/bin/python3
"""An engine's view of TempoKV from Python: keys, store, a claim and the per-step call.

    PYTHONPATH=<prefix>/lib/python3.X/dist-packages python3 tempo_example.py [store-dir]

Without an argument the sim device runs in virtual time; with a store directory the uring
device stages real bytes (and a second run over the same store finds them there). Prints
what the request loaded; exits 0 on success. The engine integrations
(tempokv.vllm, tempokv.sglang, tempokv.lmcache) are built from these same calls.
"""

import sys

import tempokv
from tempokv.keys import KeyScheme
from tempokv.runtime import LLAMA_3_1_8B_H100, Runtime, WaitingSeq
from tempokv.store import Store

settings = {"fast_tier_bytes": "4MiB", "budget_bytes": "1MiB", "policy": "tempo"}
if len(sys.argv) > 1:
    settings.update({"device": "uring", "uring.store_path": sys.argv[1], "uring.prefault": False})
CHUNK_BYTES = 16 * 1024

with tempokv.Context(settings) as ctx:
    scheme = KeyScheme("meta-llama/Llama-3.1-8B-Instruct", "bfloat16", chunk_tokens=16)
    document = list(range(100, 100 + 64))  # four 16-token chunks
    keys = scheme.chain(document)
    store = Store(ctx)
    if ctx.device == "sim":
        ctx.sim_add_objects([(k, CHUNK_BYTES) for k in keys])
    else:
        for i, k in enumerate(keys):  # idempotent: a second run puts the same bytes again
            store.put(k, bytes([65 + i]) * CHUNK_BYTES)
    print(f"libtempo {tempokv.version()} on {ctx.device}: {store.lookup(keys)} of "
          f"{len(keys)} chunks stored")

    # A request with the document as its prefix arrives: its hit becomes a claim, and the
    # runtime side gives it a TTU from the scheduler's state.
    prompt = document + [1, 2, 3]
    hit = store.lookup(scheme.chain(prompt))
    claim = ctx.report([(k, CHUNK_BYTES) for k in keys[:hit]], 1_000_000_000)
    with Runtime(ctx, LLAMA_3_1_8B_H100, max_active=4, generation_limit=128) as runtime:
        runtime.step([], [WaitingSeq(len(prompt), hit * 16, claim, hit * CHUNK_BYTES)])
    outcome = ctx.request_retrieval(claim)
    if outcome != tempokv.Retrieval.READY:
        outcome = ctx.wait_ready(claim, 10_000_000_000)
    ctx.transfer_begin(claim)
    loaded = len(ctx.read_claim(claim)) if ctx.device != "sim" else 0
    ctx.transfer_end(claim)
    print(f"req-1: {hit * 16} tokens matched, retrieval {outcome.name}, loaded {loaded} bytes")
    stats = ctx.stats()
    assert stats["claims_live"] == 0 and stats["ledger_bytes"] == 0
    print(f"claims released {stats['claims_released']}, staged {stats['staged_bytes']} bytes")
