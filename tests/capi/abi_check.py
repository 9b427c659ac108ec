"""The shipped ABI against its sources: libtempo.map's version nodes, the exports of the
public headers (each with its doc comment), the symbols libtempo.so defines, and the
version tempo_version() reports.

Usage: abi_check.py LIBTEMPO_SO MAP HEADER... (CTest runs it as capi_abi).
"""

from __future__ import annotations

import ctypes
import errno
import re
import subprocess
import sys
import unittest
from pathlib import Path

LIB, MAP, HEADERS = sys.argv[1], Path(sys.argv[2]), [Path(h) for h in sys.argv[3:]]

# tempo_claim_query and tempo_ctx_stats took no size in 0.1-0.2: binaries built then still
# find those forms at TEMPO_0.1, beside the default (@@) at TEMPO_0.3.
TWO_VERSIONS = {"tempo_claim_query", "tempo_ctx_stats"}

# A released node never changes: what each holds, every one pinned (a new function goes into
# a new node, the project version follows it). TEMPO_0.3 lists tempo_ctx_stats and
# tempo_claim_query again (their sized forms, see TWO_VERSIONS).
RELEASED = {
    "TEMPO_0.1": {
        "tempo_version", "tempo_version_check", "tempo_config_new", "tempo_config_free",
        "tempo_config_set", "tempo_config_error", "tempo_ctx_new", "tempo_ctx_ref",
        "tempo_ctx_unref", "tempo_ctx_set_log_fn", "tempo_ctx_now", "tempo_ctx_tick",
        "tempo_ctx_stats", "tempo_sim_add_objects", "tempo_sim_advance", "tempo_claim_report",
        "tempo_claim_revise", "tempo_order_update", "tempo_claim_request_retrieval",
        "tempo_claim_query", "tempo_claim_transfer_begin", "tempo_claim_transfer_end",
        "tempo_claim_cancel",
    },
    "TEMPO_0.2": {
        "tempo_config_load", "tempo_ctx_device", "tempo_claim_wait_ready", "tempo_claim_extents",
        "tempo_claim_ordinary_read", "tempo_store_put",
    },
    "TEMPO_0.3": {
        "tempo_ctx_stats", "tempo_claim_query", "tempo_key_seed", "tempo_key_chain",
        "tempo_key_layer_group", "tempo_store_lookup", "tempo_store_delete", "tempo_ctx_fast_tier",
        "tempo_writer_new", "tempo_writer_put", "tempo_writer_completions", "tempo_writer_wait",
        "tempo_writer_free", "tempo_runtime_new", "tempo_runtime_free", "tempo_runtime_step",
        "tempo_runtime_finished", "tempo_runtime_get_costs", "tempo_claim_label",
    },
    "TEMPO_0.4": {"tempo_kmod_add_objects"},
    "TEMPO_0.5": {"tempo_claim_set_layers"},
    "TEMPO_0.6": set(),
    "TEMPO_0.7": {
        "tempo_config_ref", "tempo_config_unref", "tempo_config_get_error", "tempo_writer_ref",
        "tempo_writer_unref", "tempo_runtime_ref", "tempo_runtime_unref", "tempo_ctx_get_now",
        "tempo_ctx_get_device", "tempo_ctx_get_stats", "tempo_ctx_get_fast_tier",
        "tempo_claim_get_info", "tempo_claim_get_extents", "tempo_claim_report_sized",
        "tempo_key_get_layer_group", "tempo_runtime_get_costs_sized", "tempo_ctx_set_order",
        "tempo_claim_retrieve", "tempo_claim_wait", "tempo_writer_get_completions",
        "tempo_ctx_get_store", "tempo_ctx_get_kmod", "tempo_ctx_get_sim", "tempo_store_write",
        "tempo_store_get_prefix", "tempo_store_remove", "tempo_sim_add_objects_sized",
        "tempo_sim_run", "tempo_kmod_add_objects_sized", "tempo_runtime_get_projection",
        "tempo_runtime_get_history", "tempo_runtime_get_given_ttus",
    },
}


def map_nodes() -> dict[str, set[str]]:
    """Version node -> its global symbols, in file order."""
    text = re.sub(r"/\*.*?\*/", "", MAP.read_text(), flags=re.S)
    nodes: dict[str, set[str]] = {}
    for name, body in re.findall(r"(TEMPO_\d+\.\d+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].split("global:")[-1]
        nodes[name] = {s.strip() for s in glob.split(";") if s.strip()}
    return nodes


def header_exports() -> dict[str, tuple[Path, int, list[str]]]:
    """Exported function -> (header, line index, the header's lines)."""
    out = {}
    for h in HEADERS:
        lines = h.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"TEMPO_EXPORT\b.*?\b(tempo_\w+)\(", line)
            if m:
                out[m.group(1)] = (h, i, lines)
    return out


class Abi(unittest.TestCase):
    def test_every_map_symbol_is_declared_and_every_declaration_exported(self) -> None:
        mapped = set().union(*map_nodes().values())
        declared = set(header_exports())
        self.assertEqual(mapped - declared, set(), "in libtempo.map, declared in no header")
        self.assertEqual(declared - mapped, set(), "declared TEMPO_EXPORT, missing in the map")

    def test_released_nodes_hold_what_they_shipped(self) -> None:
        nodes = map_nodes()
        for node, syms in RELEASED.items():
            self.assertEqual(nodes.get(node), syms, node)
        self.assertEqual(set(nodes) - set(RELEASED), set(), "a node not pinned here")

    def test_every_export_has_a_doc_comment(self) -> None:
        missing = []
        for name, (h, i, lines) in sorted(header_exports().items()):
            if not lines[i - 1].rstrip().endswith("*/"):
                missing.append(f"{h.name}:{i + 1}: {name}")
        self.assertEqual(missing, [], "exports without a comment right above them")

    def test_the_library_defines_the_map_and_nothing_else(self) -> None:
        nm = subprocess.run(["nm", "-D", "--defined-only", LIB], check=True,
                            capture_output=True, text=True).stdout
        found = set()
        for line in nm.splitlines():
            m = re.match(r"\S+ [TW] (tempo_\w+)@(@?)(TEMPO_\d+\.\d+)$", line)
            if m:
                found.add((m.group(1), m.group(3), m.group(2) == "@"))
        newest: dict[str, str] = {}
        for node, syms in map_nodes().items():  # file order: the last node listing a name wins
            newest.update({s: node for s in syms})
        want = {(s, node, newest[s] == node) for node, syms in map_nodes().items() for s in syms}
        self.assertEqual({s for s, _, default in want if not default}, TWO_VERSIONS)
        self.assertEqual(found, want)
        self.assertNotRegex(nm, r" [TW] (?!tempo_)\w+@@TEMPO", "a non-tempo symbol exported")

    def test_the_version_is_the_newest_node(self) -> None:
        newest = list(map_nodes())[-1]
        major, minor = (int(x) for x in newest.removeprefix("TEMPO_").split("."))
        lib = ctypes.CDLL(LIB)
        lib.tempo_version.restype = ctypes.c_char_p
        version = lib.tempo_version().decode()
        self.assertRegex(version, rf"^{major}\.{minor}\.\d+$")
        self.assertEqual(lib.tempo_version_check(major, minor), 0)
        self.assertEqual(lib.tempo_version_check(major, minor + 1), -errno.EOPNOTSUPP)
        header = next(h for h in HEADERS if h.name == "tempo.h").read_text()
        self.assertIn(f"#define TEMPO_VERSION_MAJOR {major}\n", header)
        self.assertIn(f"#define TEMPO_VERSION_MINOR {minor}\n", header)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
