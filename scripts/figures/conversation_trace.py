#!/usr/bin/python3 -B
"""A synthetic multi-turn conversation trace in the JSONL format tempo-replay reads
(timestamp in ms, input_length, output_length, hash_ids of 512-token blocks), for the
replay across hosts (Documentation/cluster.md): each turn's prompt is the whole
conversation so far (earlier prompts and answers) plus a new user message, so turn k + 1
reuses turn k's blocks, wherever turn k was served.

Conversations start as a Poisson process (--rate per second); each has 2-6 turns
(uniform) separated by a think time (exponential, --think seconds on average) plus the
previous answer; the first message is 1-4 blocks, later ones 1-2, answers 64-512 tokens
(the blocks an answer fills are hashed as part of the next prompt). The first block of a
conversation is its own (a system prompt shorter than a block, then the user's message),
so the router's prefix-affinity keeps a conversation on one engine.

usage: conversation_trace.py OUT.jsonl [--conversations N] [--rate R] [--think S] [--seed N]
"""

import argparse
import json
import random

BLOCK = 512


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--think", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    next_block = 1
    requests = []
    start = 0.0
    for _ in range(a.conversations):
        start += rng.expovariate(a.rate)
        t = start
        history = []  # block ids of the conversation so far
        pending = 0  # tokens of the last answer not yet in a full block
        for turn in range(rng.randint(2, 6)):
            new_blocks = rng.randint(1, 4) if turn == 0 else rng.randint(1, 2)
            # The previous answer's full blocks, then the new message's.
            blocks = (pending + new_blocks * BLOCK) // BLOCK
            for _ in range(blocks):
                history.append(next_block)
                next_block += 1
            output = rng.randint(64, 512)
            requests.append({"timestamp": int(t * 1000), "input_length": len(history) * BLOCK,
                             "output_length": output, "hash_ids": list(history)})
            pending = output
            t += rng.expovariate(1.0 / a.think) + output * 0.02
    requests.sort(key=lambda r: r["timestamp"])
    with open(a.out, "w") as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
