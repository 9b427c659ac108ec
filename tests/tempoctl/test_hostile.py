"""tempoctl on hostile input: replies of the wrong shape, stores it must inspect unchanged."""

import hashlib
import os
import socket
import threading
import unittest

from test_tempoctl import Base, run, run_json
from tempokv import Context


class WrongShapedReplies(Base):
    """A control socket whose reply has the wrong shape: exit 1 and say so, never abort."""

    def answer_once(self, reply: bytes) -> threading.Thread:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(self.sock)
        srv.listen(1)

        def serve():
            conn, _ = srv.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(reply + b"\n")
            srv.close()
            os.unlink(self.sock)

        t = threading.Thread(target=serve)
        t.start()
        return t

    def test_each_wrong_shape_is_a_clear_error(self):
        bad = "malformed reply from '" + self.sock + "': "
        cases = [
            ("stats", b'{"ok":true,"stats":5}', bad + "'stats' is not an object"),
            ("stats", b'{"ok":true}', bad + "'stats' is not an object"),
            ("stats", b'[1,2]', bad + "not a JSON object"),
            ("stats", b'{"ok":"yes","stats":{}}', bad + "'ok' is not true or false"),
            ("stats", b'{"ok":false,"error":7}', bad + "an error without a message"),
            ("stats", b'{"ok":false,"error":"busy"}', "tempoctl stats: busy"),
            ("claims", b'{"ok":true,"claims":{"id":1}}', bad + "'claims' is not an array"),
            ("claims", b'{"ok":true,"claims":[5]}', bad + "[json.exception.type_error.304]"),
            ("claims", b'{"ok":true,"claims":[{"state":"PLANNED","id":"x"}]}',
             bad + "[json.exception.out_of_range.403]"),
        ]
        for cmd, reply, want in cases:
            with self.subTest(reply=reply):
                t = self.answer_once(reply)
                out = run(cmd, "--socket", self.sock, code=1)
                t.join()
                self.assertIn(want, out)


RECORD = 64


class StoreInspection(Base):
    """`store ls` and `store verify` open the store read-only and change nothing."""

    def populate(self) -> str:
        with Context(device="uring", **{"uring.store_path": self.dir + "/store",
                                        "uring.prefault": False},
                     fast_tier_bytes="4MiB", budget_bytes="1MiB") as ctx:
            for k in (1, 2, 3):
                ctx.store_put(k, bytes([k]) * 4096)
        return self.dir + "/store"

    @staticmethod
    def digest(store: str) -> tuple[str, str]:
        def one(name):
            with open(os.path.join(store, name), "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        return one("catalog"), one("data")

    def test_ls_and_verify_leave_a_torn_tail_in_place(self):
        store = self.populate()
        with open(store + "/catalog", "ab") as f:
            f.write(b"\x07" * 10)  # half a record, as a crash leaves it
        before = self.digest(store)
        self.assertEqual(len(run_json("store", "ls", "--store", store)), 3)
        v = run_json("store", "verify", "--store", store, code=1)
        self.assertEqual((v["verified"], v["bad"]), (3, []))
        self.assertEqual(v["catalog_errors"],
                         ["torn catalog tail: 10 bytes after the last record ignored"])
        self.assertEqual(self.digest(store), before)
        self.assertEqual(os.path.getsize(store + "/catalog"), 3 * RECORD + 10)

    def test_a_bit_flip_in_the_last_record_is_bad_not_a_torn_tail(self):
        store = self.populate()
        with open(store + "/catalog", "r+b") as f:
            f.seek(2 * RECORD + 26)  # the offset field of key 3's record, the last one
            b = f.read(1)
            f.seek(2 * RECORD + 26)
            f.write(bytes([b[0] ^ 0x40]))
        before = self.digest(store)
        v = run_json("store", "verify", "--store", store, code=1)
        self.assertEqual(v["verified"], 2)
        self.assertEqual([(b["key"], b["error"]) for b in v["bad"]], [(3, "EBADMSG")])
        text = run("store", "verify", "--store", store, code=1)
        self.assertEqual(text.splitlines()[-1], "2 objects verified (8.00 KiB), 1 bad, 1 catalog errors")
        self.assertEqual(self.digest(store), before)

    def test_a_missing_catalog_beside_data_is_refused(self):
        store = self.populate()
        os.unlink(store + "/catalog")
        data = os.path.getsize(store + "/data")
        out = run("store", "gc", "--store", store, code=1)
        self.assertIn("no catalog", out)
        with self.assertRaisesRegex(Exception, "catalog"):
            Context(device="uring", **{"uring.store_path": store, "uring.prefault": False},
                    fast_tier_bytes="4MiB", budget_bytes="1MiB")
        self.assertFalse(os.path.exists(store + "/catalog"))
        self.assertEqual(os.path.getsize(store + "/data"), data)


if __name__ == "__main__":
    unittest.main()
