#!/usr/bin/python3
"""An engine's view of TempoKV from Python: an adapter shaped like vLLM's KV connector.

    PYTHONPATH=<prefix>/lib/python3.X/dist-packages python3 tempo_example.py [store-dir]

Without an argument the sim device runs in virtual time; with a store directory the uring
device stages real bytes. Prints what each request loaded; exits 0 on success.
"""

import sys

import tempokv

settings = {"fast_tier_bytes": "4MiB", "budget_bytes": "1MiB", "policy": "tempo"}
if len(sys.argv) > 1:
    settings.update({"device": "uring", "uring.store_path": sys.argv[1], "uring.prefault": False})

with tempokv.Context(settings) as ctx:
    conn = tempokv.TempoConnector(ctx, chunk_tokens=16, bytes_per_token=1024)
    document = list(range(100, 100 + 64))  # four 16-token chunks
    conn.save(document, lambda i, key: bytes([65 + i]) * conn.chunk_bytes)
    print(f"libtempo {tempokv.version()} on {ctx.device}: {conn.lookup(document)} tokens stored")

    conn.on_request("req-1", document + [1, 2, 3], ttu_ns=50_000_000)
    matched, is_async = conn.get_num_new_matched_tokens("req-1", 0)
    outcome = conn.update_state_after_alloc("req-1", matched)
    conn.start_load_kv(["req-1"])
    data = conn.wait_for_layer_load("req-1")
    print(f"req-1: {matched} tokens matched, retrieval {outcome.name}, "
          f"loaded {len(data)} bytes, finished {sorted(conn.get_finished())}")
    conn.request_finished("req-1")
    stats = ctx.stats()
    assert stats["claims_live"] == 0 and stats["ledger_bytes"] == 0
    print(f"claims released {stats['claims_released']}, staged {stats['staged_bytes']} bytes")
