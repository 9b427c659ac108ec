"""SGLang contract suite: TempoHiCacheStorage built by SGLang's StorageBackendFactory as a
`dynamic` backend and driven as HiCache's cache controller drives an L3 backend (SGLang main
at commit 001067fffe33: hicache_storage.py, storage/backend_factory.py,
managers/cache_controller.py; stand-ins of SGLang's modules in standins/sglang, of the
controller's storage threads below), with the host pool's real tensors, byte-exact per page,
on the `uring` device in process and through tempod with TP=2 as two processes.

SGLANG_BACKEND_MODULE / SGLANG_BACKEND_CLASS name the backend (default tempokv.sglang /
TempoHiCacheStorage)."""

import errno
import hashlib
import multiprocessing
import os
import shutil
import tempfile
import traceback
import unittest

import torch
from sglang.srt.mem_cache.hicache_storage import (STORAGE_BATCH_SIZE, HiCacheStorageConfig,
                                                  PoolHitPolicy, PoolName, PoolTransfer)
from sglang.srt.mem_cache.pool_host import MHATokenToKVPoolHost, MLATokenToKVPoolHost
from sglang.srt.mem_cache.storage import StorageBackendFactory

from tempod_fixture import TempodTestCase
from tempokv import Context, TempoError

MODULE = os.environ.get("SGLANG_BACKEND_MODULE", "tempokv.sglang")
CLASS = os.environ.get("SGLANG_BACKEND_CLASS", "TempoHiCacheStorage")
MODEL = "Qwen/Qwen2.5-14B-Instruct"
PAGE, LAYERS, HEADS, DIM, POOL = 16, 3, 4, 8, 512  # a page of 16 tokens, 3 layers, 4 heads a rank


def extra_config(tempo: dict, interface_v1: int = 1, **more) -> dict:
    config = {"backend_name": "tempokv", "module_path": MODULE, "class_name": CLASS,
              "interface_v1": interface_v1, "tempo": tempo}
    config.update(more)
    return config


def page_hashes(tokens: list, page: int = PAGE) -> list:
    """SGLang's page keys: a hash chained over the pages' token ids (hex strings)."""
    out, prior = [], b""
    for i in range(0, len(tokens) - len(tokens) % page, page):
        h = hashlib.sha256(prior + repr(tokens[i:i + page]).encode()).hexdigest()
        out.append(h)
        prior = h.encode()
    return out


def doc(seed: int, n: int) -> list:
    return [(seed * 7919 + i * i * 31 + i * 17) % 30011 for i in range(n)]


def fill(pool, indices: torch.Tensor, tokens: list, rank: int, mla: bool) -> None:
    """The KV a forward pass computed for these tokens, written where HiCache put them: a
    function of position, token, layer, (global) head and dim, in [0, 251)."""
    pos = torch.arange(len(tokens)).view(-1, 1, 1)
    tok = torch.tensor(tokens).view(-1, 1, 1)
    for layer in range(LAYERS):
        if mla:
            d = torch.arange(pool.latent_dim).view(1, -1)
            pool.token_view(layer)[indices] = ((pos.view(-1, 1) * 7 + tok.view(-1, 1) * 3
                                                + layer * 5 + d * 19) % 251).to(pool.dtype)
            continue
        h = (rank * HEADS + torch.arange(HEADS)).view(1, -1, 1)
        d = torch.arange(DIM).view(1, 1, -1)
        for kv in (0, 1):
            pool.token_view(kv, layer)[indices] = ((pos * 3 + tok * 11 + layer * 7 + kv * 5
                                                    + h * 13 + d * 17) % 251).to(pool.dtype)


def pool_bytes(pool, indices: torch.Tensor, mla: bool) -> list:
    if mla:
        return [pool.token_view(layer)[indices].clone() for layer in range(LAYERS)]
    return [pool.token_view(kv, layer)[indices].clone() for layer in range(LAYERS)
            for kv in (0, 1)]


def make_pool(layout: str, mla: bool):
    if mla:
        return MLATokenToKVPoolHost(POOL, PAGE, LAYERS, 24, layout)
    return MHATokenToKVPoolHost(POOL, PAGE, LAYERS, HEADS, DIM, layout)


class HiCache:
    """The storage half of SGLang's HiCacheController: attach (factory, registration, the
    zero-copy switch, MLA's backup from rank 0 only), backup in batches, the hit query and
    the prefetch's page transfer."""

    def __init__(self, extra: dict, pool, rank: int = 0, tp: int = 1, mla: bool = False) -> None:
        self.pool = pool
        config = HiCacheStorageConfig(tp_rank=rank, tp_size=tp, pp_rank=0, pp_size=1,
                                      attn_cp_rank=0, attn_cp_size=1, is_mla_model=mla,
                                      enable_storage_metrics=False,
                                      is_page_first_layout=pool.layout == "page_first",
                                      model_name=MODEL, extra_config=dict(extra))
        self.backup_skip = mla and rank != 0
        self.backend = StorageBackendFactory.create_backend("dynamic", config, pool)
        self.backend.register_mem_pool_host(pool)
        self.zero_copy = bool(config.extra_config.get("interface_v1", 0))

    def backup(self, host_indices: torch.Tensor, hashes: list) -> int:
        """Pages written, batch by batch, stopping at a failed batch."""
        if self.backup_skip:
            return 0
        done = 0
        for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[i:i + STORAGE_BATCH_SIZE]
            idx = host_indices[i * PAGE:(i + len(batch)) * PAGE]
            if self.zero_copy:
                ok = all(self.backend.batch_set_v1(batch, idx))
            else:
                ok = self.backend.batch_set(batch, [self.pool.get_data_page(idx[j * PAGE])
                                                    for j in range(len(batch))])
            if not ok:
                break
            done += len(batch)
        return done

    def hit_query(self, hashes: list) -> int:
        hits = 0
        for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[i:i + STORAGE_BATCH_SIZE]
            n = self.backend.batch_exists(batch)
            hits += n
            if n < len(batch):
                break
        return hits

    def transfer(self, hashes: list, host_indices: torch.Tensor) -> int:
        """The prefetch's pages read into host_indices, batch by batch."""
        done = 0
        for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[i:i + STORAGE_BATCH_SIZE]
            idx = host_indices[i * PAGE:(i + len(batch)) * PAGE]
            if self.zero_copy:
                results = self.backend.batch_get_v1(batch, idx)
                n = results.index(False) if False in results else len(results)
            else:
                pages = self.backend.batch_get(batch, [self.pool.get_dummy_flat_data_page()
                                                       for _ in batch])
                n = 0
                for j, page in enumerate(pages):
                    if page is None:
                        break
                    self.pool.set_from_flat_data_page(idx[j * PAGE], page)
                    n += 1
            done += n
            if n < len(batch):
                break
        return done

    def close(self) -> None:
        self.backend.close()


def uring_settings(directory: str) -> dict:
    return {"device": "uring", "uring.store_path": directory + "/store", "fast_tier_bytes": "8MiB",
            "budget_bytes": "4MiB", "uring.prefault": False, "policy": "tempo"}


class InProcess(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="sglang_contract_", dir=".")
        self.tempo = uring_settings(self.dir)
        self.caches = []

    def tearDown(self):
        for c in self.caches:
            c.close()
        shutil.rmtree(self.dir)

    def hicache(self, layout="page_first", mla=False, **extra) -> HiCache:
        c = HiCache(extra_config(self.tempo, **extra), make_pool(layout, mla), mla=mla)
        self.caches.append(c)
        return c

    def round_trip(self, c: HiCache, tokens: list) -> None:
        """Back up a prompt's pages from where the device wrote them, prefetch them into other
        host slots, byte for byte."""
        hashes = page_hashes(tokens)
        src = c.pool.alloc(len(hashes) * PAGE)
        fill(c.pool, src, tokens[:len(hashes) * PAGE], 0, isinstance(c.pool, MLATokenToKVPoolHost))
        self.assertEqual(c.hit_query(hashes), 0)
        self.assertEqual(c.backup(src, hashes), len(hashes))
        self.assertEqual(c.hit_query(hashes + ["f" * 64]), len(hashes))
        dst = c.pool.alloc(len(hashes) * PAGE)
        self.assertEqual(c.transfer(hashes, dst), len(hashes))
        mla = isinstance(c.pool, MLATokenToKVPoolHost)
        for a, b in zip(pool_bytes(c.pool, src, mla), pool_bytes(c.pool, dst, mla)):
            self.assertTrue(torch.equal(a, b))
        stats = c.backend.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"]),
                         (0, 0, 0))

    def test_the_dynamic_factory_builds_it_from_the_storage_config(self):
        c = self.hicache()
        self.assertEqual(c.backend.ctx.device, "uring")
        self.assertTrue(c.zero_copy)

    def test_zero_copy_pages_round_trip_in_every_host_layout(self):
        for layout in ("page_first", "layer_first", "page_first_direct"):
            with self.subTest(layout):
                self.round_trip(self.hicache(layout), doc(len(layout), 100))

    def test_the_generic_path_round_trips(self):
        self.round_trip(self.hicache(interface_v1=0), doc(2, 100))

    def test_mla_pages_round_trip(self):
        self.round_trip(self.hicache(mla=True), doc(3, 100))

    def test_a_page_held_with_other_bytes_fails_its_backup(self):
        c = self.hicache()
        tokens = doc(4, 64)
        hashes = page_hashes(tokens)
        src = c.pool.alloc(len(hashes) * PAGE)
        fill(c.pool, src, tokens, 0, False)
        self.assertEqual(c.backup(src, hashes), 4)
        c.pool.token_view(0, 0)[src[PAGE]] += 1  # page 1 changed under its key
        self.assertEqual(c.backend.batch_set_v1(hashes, src), [True, False, True, True])
        self.assertEqual(c.backend.batch_set_v1(hashes[:1], src[:PAGE]), [True])  # idempotent

    def test_v2_pool_transfers_with_hit_policies(self):
        c = self.hicache()
        swa = make_pool("page_first", False)
        c.backend.register_mem_host_pool_v2(swa, PoolName.SWA)
        tokens = doc(5, 96)
        hashes = page_hashes(tokens)
        kv_idx = c.pool.alloc(len(hashes) * PAGE)
        swa_idx = swa.alloc(len(hashes) * PAGE)
        fill(c.pool, kv_idx, tokens, 0, False)
        fill(swa, swa_idx, tokens, 1, False)
        kv = PoolTransfer(PoolName.KV, kv_idx, keys=hashes)
        tail = PoolTransfer(PoolName.SWA, swa_idx[4 * PAGE:], keys=hashes[4:],
                            hit_policy=PoolHitPolicy.TRAILING_PAGES)
        self.assertEqual(c.backend.batch_set_v2([kv, tail]),
                         {"kv": [True] * 6, "swa": [True, True]})
        r = c.backend.batch_exists_v2(hashes, [PoolTransfer(PoolName.SWA, keys=hashes[4:],
                                                            hit_policy=PoolHitPolicy.TRAILING_PAGES)])
        self.assertEqual((r.kv_hit_pages, r.extra_pool_hit_pages), (6, {"kv": 6, "swa": 6}))
        r = c.backend.batch_exists_v2(hashes, [PoolTransfer(PoolName.SWA, keys=hashes)])
        self.assertEqual(r.kv_hit_pages, 0)  # every page's SWA state asked: none of 0-3 held
        out_kv = c.pool.alloc(len(hashes) * PAGE)
        out_swa = swa.alloc(2 * PAGE)
        got = c.backend.batch_get_v2([PoolTransfer(PoolName.KV, out_kv, keys=hashes),
                                      PoolTransfer(PoolName.SWA, out_swa, keys=hashes[4:])])
        self.assertEqual(got, {"kv": [True] * 6, "swa": [True, True]})
        for a, b in zip(pool_bytes(c.pool, kv_idx, False), pool_bytes(c.pool, out_kv, False)):
            self.assertTrue(torch.equal(a, b))
        for a, b in zip(pool_bytes(swa, swa_idx[4 * PAGE:], False), pool_bytes(swa, out_swa, False)):
            self.assertTrue(torch.equal(a, b))

    def test_bad_input_is_refused_with_the_reason(self):
        c = self.hicache()
        with self.assertRaisesRegex(ValueError, "2 pages need 32 host indices, got 16"):
            c.backend.batch_get_v1(["a", "b"], torch.arange(16))
        with self.assertRaisesRegex(ValueError, "non-empty strings"):
            c.backend.batch_exists([""])
        with self.assertRaisesRegex(ValueError, "'mamba' is not registered"):
            c.backend.batch_get_v2([PoolTransfer(PoolName.MAMBA, torch.arange(16), keys=["a"])])
        with self.assertRaisesRegex(ValueError, "unknown key 'get_timeout': accepted"):
            HiCache(extra_config(self.tempo, get_timeout=5), make_pool("page_first", False))
        config = HiCacheStorageConfig(0, 1, 0, 1, 0, 1, False, False, True, None,
                                      extra_config=extra_config(self.tempo))
        with self.assertRaisesRegex(ValueError, "model_name is not set"):
            StorageBackendFactory.create_backend("dynamic", config, None)

    def test_tp2_on_one_store_without_tempod_says_what_to_do(self):
        with Context(self.tempo):  # rank 0's process holds the store
            with self.assertRaises(TempoError) as e:
                HiCache(extra_config(self.tempo), make_pool("page_first", False), rank=1, tp=2)
            self.assertEqual(e.exception.errno, errno.EBUSY)
            self.assertIn("run tempod and give every rank device = daemon", str(e.exception))


def rank_main(rank: int, sock: str, mla: bool, commands, results) -> None:
    """One TP rank's scheduler process: its host pool and backend on tempod."""
    try:
        c = HiCache(extra_config({"device": "daemon", "daemon.socket": sock}),
                    make_pool("page_first", mla), rank, 2, mla)
        results.put(("ready", None))
    except Exception:
        results.put(("error", traceback.format_exc()))
        return
    while (cmd := commands.get()) is not None:
        op, tokens, value = cmd
        try:
            hashes = page_hashes(tokens)
            if op == "backup":
                src = c.pool.alloc(len(hashes) * PAGE)
                fill(c.pool, src, tokens[:len(hashes) * PAGE], rank, mla)
                results.put(("ok", c.backup(src, hashes)))
            elif op == "hits":
                results.put(("ok", c.hit_query(hashes)))
            else:  # prefetch the agreed number of pages, compare with the model's KV
                dst = c.pool.alloc(value * PAGE)
                done = c.transfer(hashes[:value], dst)
                want = make_pool("page_first", mla)
                ref = want.alloc(value * PAGE)
                fill(want, ref, tokens[:value * PAGE], rank, mla)
                same = all(torch.equal(a, b) for a, b in zip(pool_bytes(c.pool, dst, mla),
                                                             pool_bytes(want, ref, mla)))
                results.put(("ok", (done, same)))
        except Exception:
            results.put(("error", traceback.format_exc()))
    c.close()


class TensorParallelThroughTempod(TempodTestCase):
    CONF = "device = uring\nfast_tier_bytes = 16MiB\nbudget_bytes = 4MiB\npolicy = tempo\n"

    def setUp(self):
        super().setUp()
        self.ranks = []

    def start(self, mla: bool) -> None:
        mp = multiprocessing.get_context("fork")
        for r in range(2):
            q = (mp.Queue(), mp.Queue())
            p = mp.Process(target=rank_main, args=(r, self.sock, mla, *q))
            p.start()
            self.ranks.append((p, *q))
        for _, _, res in self.ranks:
            status, error = res.get(timeout=120)
            self.assertEqual(status, "ready", error)

    def tearDown(self):
        for p, c, _ in self.ranks:
            c.put(None)
            p.join(60)
        super().tearDown()

    def all(self, op, tokens, value=None) -> list:
        for _, c, _ in self.ranks:
            c.put((op, tokens, value))
        out = []
        for _, _, res in self.ranks:
            status, v = res.get(timeout=120)
            self.assertEqual(status, "ok", v)
            out.append(v)
        return out

    def prefetch(self, tokens) -> list:
        """HiCache's prefetch: every rank's hits, the minimum over ranks, then each rank reads
        that many pages."""
        agreed = min(self.all("hits", tokens))
        return agreed, self.all("get", tokens, agreed)

    def test_each_rank_backs_up_and_prefetches_its_own_heads(self):
        self.start(mla=False)
        tokens = doc(8, 100)
        self.assertEqual(self.all("backup", tokens), [6, 6])
        agreed, got = self.prefetch(tokens)
        self.assertEqual(agreed, 6)
        self.assertEqual(got, [(6, True), (6, True)])

    def test_mla_is_backed_up_by_rank_0_and_prefetched_by_every_rank(self):
        self.start(mla=True)
        tokens = doc(9, 100)
        self.assertEqual(self.all("backup", tokens), [6, 0])  # HiCache skips rank 1's backup
        agreed, got = self.prefetch(tokens)
        self.assertEqual(agreed, 6)  # rank 1 finds rank 0's pages
        self.assertEqual(got, [(6, True), (6, True)])


if __name__ == "__main__":
    unittest.main()
