#!/usr/bin/python3
"""A deterministic multi-turn conversation trace in the Mooncake JSONL format, for the
tempo-sim speed bench (scripts/bench/tempo_sim_vs_libcachesim.sh).

Shaped after Mooncake's conversation trace (12,031 requests over an hour, prompts of about
12k tokens whose 512-token blocks are mostly a session's earlier turns, a few hundred
output tokens): sessions share a system prompt, each turn resends its session's history
plus new user blocks, and requests arrive faster than one GPU at batch one serves them,
so a long queue builds up (the case that made the engine's per-decision cost grow).

usage: tempo_sim_trace.py OUT.jsonl [REQUESTS (12000)] [STRETCH (1)]
STRETCH multiplies every timestamp (20 spreads arrivals out until no queue forms).
"""
import json
import random
import sys


def main():
    out = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 12000
    stretch = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    rng = random.Random(16)
    next_id = 0

    def fresh(n):
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return ids

    system = fresh(4)
    sessions = []
    t = 0.0
    with open(out, "w") as f:
        for _ in range(requests):
            # A new session one time in ten, else the next turn of a recent one.
            if not sessions or rng.random() < 1 / 10:
                sessions.append(list(system))
            s = sessions[max(0, len(sessions) - 1 - int(rng.expovariate(1 / 8)))]
            s.extend(fresh(rng.randint(1, 6)))
            if len(s) > 100:  # the client trims old turns, keeping the system prompt
                del s[4:len(s) - 64]
            t += rng.expovariate(1 / 300.0)  # ms between arrivals
            f.write(json.dumps({"timestamp": int(t * stretch),
                                "input_length": len(s) * 512 - rng.randint(0, 511),
                                "output_length": rng.randint(64, 511),
                                "hash_ids": s}) + "\n")


if __name__ == "__main__":
    main()
