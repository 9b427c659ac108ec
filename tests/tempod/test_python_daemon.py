"""The Python binding against tempod: the same Context API in client mode (device = daemon)."""

import errno
import os
import unittest

from tempod_fixture import TempodTestCase
from tempokv import ClaimState, Context, Retrieval, TempoError


class AgainstTempod(TempodTestCase):
    def test_put_report_retrieve_read_in_place(self):
        data = bytes(range(256)) * 1024
        with Context(device="daemon", **{"daemon.socket": self.sock}) as ctx:
            self.assertEqual(ctx.device, "uring")
            ctx.store_put(7, data)
            ctx.store_put(7, data)  # idempotent: the same bytes again
            with self.assertRaises(TempoError) as e:
                ctx.store_put(7, data[::-1])
            self.assertEqual(e.exception.errno, errno.EEXIST)
            cid = ctx.report([(7, len(data))], 10_000_000_000)
            self.assertEqual(ctx.query(cid).state, ClaimState.PLANNED)
            ctx.label(cid, "cmpl-1")
            for bad_id, request, err in ((cid + 99, "x", errno.ENOENT),
                                         (cid, "y" * 40, errno.EINVAL)):
                with self.assertRaises(TempoError) as e:
                    ctx.label(bad_id, request)
                self.assertEqual(e.exception.errno, err)
            ctx.request_retrieval(cid)
            self.assertEqual(ctx.wait_ready(cid, 5_000_000_000), Retrieval.READY)
            ctx.transfer_begin(cid)
            self.assertEqual(ctx.read_claim(cid), data)
            ctx.transfer_end(cid)
            self.assertEqual(ctx.stats()["ledger_bytes"], 0)

    def test_environment_selects_the_daemon(self):
        os.environ["TEMPO_DAEMON"] = self.sock
        try:
            with Context(device="sim") as ctx:
                self.assertEqual(ctx.device, "uring")
                with self.assertRaises(TempoError) as e:
                    ctx.sim_advance(1)
                self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        finally:
            del os.environ["TEMPO_DAEMON"]


if __name__ == "__main__":
    unittest.main()
