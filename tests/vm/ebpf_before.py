#!/usr/bin/env python3
"""Item 9 of issue 18, for `make vm-test-before`: tests/ebpf/run.py's test_binary_path (the
eBPF tools attached to probe-driver by its path) while another process of the same binary
fires its probes all along, as when two test runs overlap. Run for the test as it was
before the issue (run.py in OLD_EBPF_DIR) and as it is (tests/ebpf/run.py), with the same
tools: the old test counts the other process too and fails; the current one, which
filters on the PID it started, passes. Prints one line for each; exit 0 when the old test
failed and the current one passed.

Usage: ebpf_before.py EBPF_OUT OLD_EBPF_DIR   (root: the tools attach uprobes)
"""
import importlib.util
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def beside_another_process(test, build):
    """Runs test.test_binary_path while other probe-driver processes fire; its failures."""
    stop = threading.Event()

    def other():
        while not stop.is_set():
            test.Driver(build, 5).fire()

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    try:
        test.test_binary_path(build)
    finally:
        stop.set()
        thread.join(timeout=60)
    return list(test.failures)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    build, old_dir = sys.argv[1], sys.argv[2]
    old = beside_another_process(load(os.path.join(old_dir, "run.py"), "run_before"), build)
    new = beside_another_process(
        load(os.path.join(HERE, "..", "ebpf", "run.py"), "run_now"), build)
    if old:
        print(f"vm-test-before: item 9: FAILS on the old test as expected: {len(old)} checks "
              f"failed beside another probe-driver, first: {old[0]}")
    else:
        print("vm-test-before: item 9: unexpectedly passes (the old test beside another "
              "probe-driver)")
    print(f"vm-test-before: item 9: the current test beside the same: "
          f"{'PASS' if not new else f'{len(new)} checks failed, first: {new[0]}'}")
    return 0 if old and not new else 1


if __name__ == "__main__":
    sys.exit(main())
