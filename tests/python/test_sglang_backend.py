"""The SGLang-HiCache-shaped backend on the uring device, with host tensors as SGLang's host
pool pages: the calls HiCache's backup and prefetch threads make, bytes checked per page."""

import shutil
import tempfile
import unittest

import torch

from tempokv import Context
from tempokv.keys import KeyScheme
from tempokv.sglang_backend import TempoHiCacheStorage

PAGE = 8192


def page(i: int) -> torch.Tensor:
    return ((torch.arange(PAGE // 2, dtype=torch.int32) * 7 + i * 131) % 30000).to(
        torch.int16).view(torch.uint8)


class SglangBackend(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sglang_", dir=".")
        self.ctx = Context({"device": "uring", "uring.store_path": self.dir + "/store",
                            "fast_tier_bytes": "4MiB", "budget_bytes": "1MiB",
                            "uring.prefault": False, "policy": "tempo"})
        self.scheme = KeyScheme("Qwen/Qwen2.5-14B-Instruct", "bfloat16", tp_rank=0, tp_size=2)
        self.backend = TempoHiCacheStorage(self.ctx, self.scheme, PAGE)

    def tearDown(self):
        self.backend.close()
        self.ctx.close()
        shutil.rmtree(self.dir)

    def test_backup_then_prefetch_into_host_pages(self):
        b = self.backend
        keys = [f"{i:064x}" for i in range(1, 7)]
        self.assertEqual(b.batch_exists(keys), 0)
        self.assertTrue(b.batch_set(keys[:4], [page(i) for i in range(4)]))
        self.assertTrue(b.batch_set(keys[:2], [page(0), page(1)]))  # again: idempotent
        self.assertFalse(b.set(keys[0], page(5)))  # other bytes under a held key
        self.assertTrue(b.exists(keys[3]))
        self.assertFalse(b.exists(keys[4]))
        self.assertEqual(b.batch_exists(keys), 4)
        # Prefetch into host pool pages (preallocated, written in place).
        pool = torch.zeros(6, PAGE, dtype=torch.uint8)
        got = b.batch_get(keys, [pool[i] for i in range(6)])
        for i in range(4):
            self.assertEqual(got[i].data_ptr(), pool[i].data_ptr())
            self.assertTrue(torch.equal(pool[i], page(i)), f"page {i}")
        self.assertEqual(got[4:], [None, None])
        self.assertEqual(int(torch.count_nonzero(pool[4:])), 0)
        one = b.get(keys[2])
        self.assertTrue(torch.equal(one, page(2)))
        self.assertIsNone(b.get(keys[5]))
        stats = self.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"], stats["claims_released"]),
                         (0, 0, 2))

    def test_ranks_do_not_share_pages_and_clear_deletes_ours(self):
        b = self.backend
        other = TempoHiCacheStorage(self.ctx, KeyScheme("Qwen/Qwen2.5-14B-Instruct", "bfloat16",
                                                        tp_rank=1, tp_size=2), PAGE)
        try:
            self.assertTrue(b.set("abc", page(1)))
            self.assertFalse(other.exists("abc"))
            self.assertTrue(other.set("abc", page(2)))  # its own object: no conflict
            self.assertTrue(torch.equal(other.get("abc"), page(2)))
            self.assertTrue(torch.equal(b.get("abc"), page(1)))
            b.clear()
            self.assertFalse(b.exists("abc"))
            self.assertTrue(other.exists("abc"))
        finally:
            other.close()
        with self.assertRaisesRegex(ValueError, "pages are 8192"):
            b.set("x", torch.zeros(100, dtype=torch.uint8))
        with self.assertRaisesRegex(ValueError, "non-empty strings"):
            b.exists("")


if __name__ == "__main__":
    unittest.main()
