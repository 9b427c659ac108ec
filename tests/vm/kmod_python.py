"""The Python binding (tempokv) on device=kmod, in the guest (tests/vm/init.sh).

Usage: python3 kmod_python.py NAME DEV DISK. One "PASS NAME.check" or "FAIL NAME.check: why"
line per check; exit 1 if any failed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys

import tempokv

# TEMPO_IOC_GET_INFO = _IOR(0xD6, 0x00, struct tempo_info): 80 bytes, 5 u64, 4 u32, 3 u64.
_INFO = struct.Struct("<5Q4I3Q")
_GET_INFO = (2 << 30) | (_INFO.size << 16) | (0xD6 << 8) | 0x00
_RESET = (0xD6 << 8) | 0x07  # _IO(0xD6, 0x07)

failed = 0


def result(name: str, check: str, ok: bool, why: str = "") -> None:
    global failed
    print(f"PASS {name}.{check}" if ok else f"FAIL {name}.{check}: {why}", flush=True)
    failed += 0 if ok else 1


def main() -> int:
    name, dev, disk = sys.argv[1:4]
    fd = os.open(dev, os.O_RDWR)
    buf = bytearray(_INFO.size)
    fcntl.ioctl(fd, _GET_INFO, buf)
    size, fast, extent, pin_limit = _INFO.unpack(buf)[:4]
    fcntl.ioctl(fd, _RESET, 0)
    os.close(fd)
    budget = 4 * extent
    ctx = tempokv.Context({"device": "kmod", "kmod.path": dev, "policy": "demand",
                           "fast_tier_bytes": fast, "budget_bytes": budget})
    result(name, "ctx_device", ctx.device == "kmod", ctx.device)
    # objects 1..4 in extents 1..4 of the disk, whose bytes they hold
    with open(disk, "rb") as f:
        want = {k: os.pread(f.fileno(), extent, k * extent) for k in range(1, 5)}
    ctx.kmod_add_objects([(k, k * extent, extent) for k in range(1, 5)])
    try:
        ctx.kmod_add_objects([(9, 9 * extent + 4096, extent)])
        result(name, "place_misaligned", False, "accepted")
    except tempokv.TempoError as e:
        result(name, "place_misaligned", e.errno == errno.EINVAL, str(e))
    try:
        ctx.store_put(1, b"x")
        result(name, "store_put_refused", False, "accepted")
    except tempokv.TempoError as e:
        result(name, "store_put_refused", e.errno == errno.EOPNOTSUPP, str(e))
    manifest = [(k, extent) for k in (1, 2, 3)]
    cid = ctx.report(manifest, 60_000_000_000)
    result(name, "report", ctx.query(cid).state == tempokv.ClaimState.PLANNED)
    out = ctx.request_retrieval(cid)
    if out == tempokv.Retrieval.WAIT:
        out = ctx.wait_ready(cid, 20_000_000_000)
    result(name, "stage_ready", out == tempokv.Retrieval.READY, str(out))
    ctx.transfer_begin(cid)
    got = ctx.read_claim(cid)
    result(name, "mapped_bytes_equal_disk", got == b"".join(want[k] for k in (1, 2, 3)),
           f"{len(got)} bytes")
    ctx.transfer_end(cid)
    result(name, "release", ctx.query(cid).state == tempokv.ClaimState.RELEASED)
    planned = ctx.report([(4, extent)], 60_000_000_000)
    ctx.cancel(planned)
    result(name, "cancel", ctx.query(planned).state == tempokv.ClaimState.CANCELLED)
    st = ctx.stats()
    result(name, "stats", st["claims_released"] == 1 and st["claims_cancelled"] == 1
           and st["ledger_bytes"] == 0 and st["stage_ops"] >= 3, str(st))
    ctx.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
