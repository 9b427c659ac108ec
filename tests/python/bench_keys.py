#!/usr/bin/python3 -B
"""The chain hash of a 32k-token prompt from Python (make bench-engines), beside the cost of
merely converting the same token list to machine integers (what any hashing of a Python
list must pay): prints microseconds per prompt for both and their ratio."""

import array
import time

from tempokv.keys import KeyScheme


def per_call_us(fn, reps=200):
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps * 1e6)
    return best


def main():
    scheme = KeyScheme("meta-llama/Llama-3.1-8B-Instruct", "bfloat16", chunk_tokens=256)
    tokens = list(range(7, 7 + 32768))
    ids = array.array("I", tokens)
    convert = per_call_us(lambda: array.array("I", tokens))
    from_list = per_call_us(lambda: scheme.chain(tokens))
    from_array = per_call_us(lambda: scheme.chain(ids))
    print(f"python chain hash, 32768 tokens: from a list {from_list:.1f} us "
          f"(list -> uint32 conversion alone {convert:.1f} us, ratio {from_list / convert:.2f}); "
          f"from an array('I') {from_array:.1f} us")


if __name__ == "__main__":
    main()
