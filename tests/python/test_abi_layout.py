"""The ctypes mirrors of the C ABI's structs (libtempo/python/tempokv) against the C compiler.

Every complete `struct tempo_*` of the public headers (libtempo/include/tempo/*.h) has one
ctypes Structure in the package, and every Structure mirrors one: same size, same fields in
the same order, each at the same offset with the same kind and size (uint32 vs int32, a
pointer to which struct, an array of how many). The layout is the compiler's own: gcc
compiles the headers with -fno-eliminate-unused-debug-types (so every declared type is
described) and the DWARF it writes is read back with readelf. Nothing is listed by hand, so
a struct or a field the header gains fails here until the package mirrors it.

Class names follow the struct's: struct tempo_claim_info is TempoClaimInfo or ClaimInfo.
"""

from __future__ import annotations

import ast
import ctypes
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "libtempo" / "include"
PYTHON = ROOT / "libtempo" / "python"
PACKAGE = PYTHON / "tempokv"


@dataclass
class Field:
    name: str
    offset: int
    kind: tuple


@dataclass
class CStruct:
    name: str
    size: int
    fields: list[Field]
    where: str  # "tempo.h:55"


# --- the compiler's layout -------------------------------------------------------------

_DIE = re.compile(r"^\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+(?: \((DW_TAG_\w+)\))?")
_ATTR = re.compile(r"^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$")


def _dies(readelf_output: str) -> dict[int, dict]:
    """DIE offset -> {tag, attrs, children, depth}, from `readelf --debug-dump=info`."""
    dies: dict[int, dict] = {}
    parents: list[int] = []
    current = None
    for line in readelf_output.splitlines():
        m = _DIE.match(line)
        if m:
            depth, offset, tag = int(m.group(1)), int(m.group(2), 16), m.group(3)
            del parents[depth:]
            if tag is None:  # the null entry that ends a list of children
                current = None
                continue
            current = {"tag": tag, "attrs": {}, "children": [], "depth": depth}
            dies[offset] = current
            if parents:
                dies[parents[-1]]["children"].append(offset)
            parents.append(offset)
            continue
        m = _ATTR.match(line)
        if m and current is not None:
            # Some readelf builds print the form first: "(data1) 8", "(strp) (offset: 0x2): x".
            current["attrs"][m.group(1)] = re.sub(r"^\([a-z0-9_]+\)\s+", "", m.group(2).strip())
    return dies


def _string(value: str) -> str:
    # "(indirect string, offset: 0x5c4): ptrdiff_t" or a plain "int"
    return re.sub(r"^\([^()]*\): ", "", value)


def _number(value: str) -> int:
    # "8", or a location expression "2 byte block: 23 8 (DW_OP_plus_uconst: 8)"
    m = re.search(r"DW_OP_plus_uconst: (\d+)", value)
    return int(m.group(1) if m else value.split()[0], 0)


def _ref(value: str) -> int:
    return int(re.search(r"<0x([0-9a-f]+)>", value).group(1), 16)


def _declared_only(dies: dict[int, dict], offset: int) -> bool:
    """Whether a type, past its typedefs and qualifiers, is a struct the headers never define."""
    die = dies[offset]
    if "DW_AT_declaration" in die["attrs"]:
        return True
    return "DW_AT_type" in die["attrs"] and die["tag"] != "DW_TAG_pointer_type" and \
        _declared_only(dies, _ref(die["attrs"]["DW_AT_type"]))


def _c_kind(dies: dict[int, dict], offset: int | None) -> tuple:
    """The kind of a C type, in the vocabulary _py_kind speaks."""
    if offset is None:
        return ("void",)
    die = dies[offset]
    tag, attrs = die["tag"], die["attrs"]
    target = _ref(attrs["DW_AT_type"]) if "DW_AT_type" in attrs else None
    if tag in ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
               "DW_TAG_restrict_type", "DW_TAG_atomic_type"):
        return _c_kind(dies, target)
    if tag == "DW_TAG_base_type":
        name, size = _string(attrs["DW_AT_name"]), _number(attrs["DW_AT_byte_size"])
        encoding = re.search(r"\((\w+(?: \w+)?)\)", attrs["DW_AT_encoding"]).group(1)
        if name == "char":  # plain char: its signedness is the platform's, as c_char's is
            return ("char", 1)
        if encoding == "float":
            return ("float", size)
        if encoding == "boolean":
            return ("bool", size)
        return ("int", size, encoding.startswith("signed"))
    if tag == "DW_TAG_enumeration_type":
        if target is not None:
            return _c_kind(dies, target)
        return ("int", _number(attrs["DW_AT_byte_size"]), False)
    if tag == "DW_TAG_pointer_type":
        pointee = _c_kind(dies, target)
        if pointee[0] in ("structure", "union") and _declared_only(dies, target):
            return ("pointer", ("void",))  # an opaque handle (struct tempo_ctx*): c_void_p
        return ("pointer", pointee)
    if tag == "DW_TAG_subroutine_type":
        return ("function",)
    if tag == "DW_TAG_array_type":
        kind = _c_kind(dies, target)
        for sub in reversed(die["children"]):  # int a[2][3]: an array of 2 arrays of 3
            bounds = dies[sub]["attrs"]
            if "DW_AT_count" in bounds:
                count = _number(bounds["DW_AT_count"])
            elif "DW_AT_upper_bound" in bounds:
                count = _number(bounds["DW_AT_upper_bound"]) + 1
            else:
                count = 0  # a flexible array member
            kind = ("array", count, kind)
        return kind
    if tag in ("DW_TAG_structure_type", "DW_TAG_union_type"):
        name = _string(attrs["DW_AT_name"]) if "DW_AT_name" in attrs else "(anonymous)"
        return (tag.removeprefix("DW_TAG_").removesuffix("_type"), name)
    raise AssertionError(f"test_abi_layout: no rule for a {tag} in a struct; teach _c_kind")


def c_structs(include: Path) -> dict[str, CStruct]:
    """Every complete struct tempo_* the headers under include/tempo define, as gcc lays it out."""
    headers = sorted((include / "tempo").glob("*.h"))
    with tempfile.TemporaryDirectory() as work:
        tu = Path(work) / "layout.c"
        tu.write_text("".join(f"#include <tempo/{h.name}>\n" for h in headers))
        # Under ASan the library's runtime is preloaded into this interpreter: not into gcc.
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-std=c11", "-g", "-gdwarf-4", "-O0",
                        "-fno-eliminate-unused-debug-types", f"-I{include}", "-c", str(tu),
                        "-o", f"{work}/layout.o"], check=True, env=env)
        dump = subprocess.run(["readelf", "--debug-dump=info,rawline", f"{work}/layout.o"],
                              check=True, capture_output=True, text=True, env=env).stdout
    dies = _dies(dump)
    # DW_AT_decl_file indexes the line table's file names ("  7\t4\t0\t0\ttempo.h").
    table = dump.split("The File Name Table", 1)[1]
    files = {int(m.group(1)): m.group(2)
             for m in re.finditer(r"^\s+(\d+)\t\d+\t\d+\t\d+\t(\S+)$", table, flags=re.M)}
    out: dict[str, CStruct] = {}
    for die in dies.values():
        attrs = die["attrs"]
        name = _string(attrs.get("DW_AT_name", ""))
        if (die["tag"] != "DW_TAG_structure_type" or die["depth"] != 1
                or not name.startswith("tempo_") or "DW_AT_declaration" in attrs):
            continue
        fields = []
        for child in die["children"]:
            member = dies[child]
            if member["tag"] != "DW_TAG_member":
                continue
            m = member["attrs"]
            if "DW_AT_bit_size" in m:
                raise AssertionError(f"struct {name}: a bit-field; ctypes mirrors and this test "
                                     "take whole fields only")
            fields.append(Field(_string(m["DW_AT_name"]),
                                _number(m.get("DW_AT_data_member_location", "0")),
                                _c_kind(dies, _ref(m["DW_AT_type"]))))
        line = _number(attrs.get("DW_AT_decl_line", "0"))
        where = files.get(_number(attrs.get("DW_AT_decl_file", "0")), "a header")
        out[name] = CStruct(name, _number(attrs["DW_AT_byte_size"]), fields, f"{where}:{line}")
    return out


# --- the package's mirrors -------------------------------------------------------------

def struct_name(cls: type) -> str:
    """The struct a class mirrors: TempoClaimInfo and ClaimInfo mirror struct tempo_claim_info."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    return "tempo_" + snake.removeprefix("tempo_")


def class_names(struct: str) -> str:
    camel = "".join(part.capitalize() for part in struct.removeprefix("tempo_").split("_"))
    return f"Tempo{camel} or {camel}"


_BASES = {"Structure", "Union", "LittleEndianStructure", "BigEndianStructure"}


def py_structs(package: Path) -> dict[type, str]:
    """Every ctypes Structure or Union class the package's modules define -> 'tempokv.mod.Cls'.

    The modules are found by reading their source, so only those defining structures are
    imported (not, say, a connector that imports torch)."""
    found: dict[type, str] = {}
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)
                 and any(ast.unparse(base).split(".")[-1] in _BASES for base in node.bases)]
        if not names:
            continue
        module = importlib.import_module(f"{package.name}.{path.stem}")
        for name in names:
            found[getattr(module, name)] = f"{package.name}.{path.stem}.{name}"
    return found


_CODES = {"b": True, "h": True, "i": True, "l": True, "q": True,
          "B": False, "H": False, "I": False, "L": False, "Q": False}


def _py_kind(t: type) -> tuple:
    if issubclass(t, ctypes.Structure):
        return ("structure", struct_name(t))
    if issubclass(t, ctypes.Union):
        return ("union", struct_name(t))
    if issubclass(t, ctypes.Array):
        return ("array", t._length_, _py_kind(t._type_))
    if issubclass(t, ctypes._Pointer):
        return ("pointer", _py_kind(t._type_))
    if issubclass(t, ctypes._CFuncPtr):
        return ("pointer", ("function",))
    code = getattr(t, "_type_", None)
    if code == "z":
        return ("pointer", ("char", 1))
    if code == "P":
        return ("pointer", ("void",))
    if code == "c":
        return ("char", 1)
    if code == "?":
        return ("bool", ctypes.sizeof(t))
    if code in ("f", "d", "g"):
        return ("float", ctypes.sizeof(t))
    if code in _CODES:
        return ("int", ctypes.sizeof(t), _CODES[code])
    raise AssertionError(f"test_abi_layout: no rule for ctypes type {t!r}; teach _py_kind")


def spell(kind: tuple) -> str:
    """A kind as a reader writes it: uint32, double, pointer to struct tempo_step, uint64[2]."""
    if kind[0] == "int":
        return f"{'' if kind[2] else 'u'}int{8 * kind[1]}"
    if kind[0] == "float":
        return {4: "float", 8: "double"}.get(kind[1], f"float{8 * kind[1]}")
    if kind[0] == "pointer":
        return f"pointer to {spell(kind[1])}"
    if kind[0] == "array":
        return f"{spell(kind[2])}[{kind[1]}]"
    if kind[0] in ("structure", "union"):
        return f"{'struct' if kind[0] == 'structure' else 'union'} {kind[1]}"
    return kind[0]


def mismatches(c: dict[str, CStruct], py: dict[type, str]) -> list[str]:
    """What differs between the headers' structs and the package's mirrors, one line each."""
    problems = []
    mirrors: dict[str, list[type]] = {}
    for cls, where in py.items():
        name = struct_name(cls)
        if name not in c:
            problems.append(f"{where} mirrors no struct of the headers (struct {name})")
        else:
            mirrors.setdefault(name, []).append(cls)
    for name, s in sorted(c.items()):
        found = mirrors.get(name, [])
        if not found:
            problems.append(f"struct {name} ({s.where}) has no ctypes mirror in "
                            f"libtempo/python/tempokv: add {class_names(name)} with its "
                            f"{len(s.fields)} fields")
            continue
        if len(found) > 1:
            problems.append(f"struct {name} has {len(found)} mirrors: "
                            + ", ".join(sorted(py[cls] for cls in found)))
        for cls in found:
            where = py[cls]
            if ctypes.sizeof(cls) != s.size:
                problems.append(f"struct {name}: sizeof is {s.size} in C, {ctypes.sizeof(cls)} in "
                                f"{where}")
            py_fields = {f[0]: getattr(cls, f[0]) for f in cls._fields_}
            py_order = [f[0] for f in cls._fields_]
            c_order = [f.name for f in s.fields]
            for f in s.fields:
                if f.name not in py_fields:
                    problems.append(f"{name}.{f.name} ({spell(f.kind)} at offset {f.offset}) is "
                                    f"not in {where}: add it to _fields_")
                    continue
                have = py_fields[f.name]
                kind = _py_kind(dict(cls._fields_)[f.name])
                if have.offset != f.offset:
                    problems.append(f"{name}.{f.name}: offset {f.offset} in C, {have.offset} in "
                                    f"{where}")
                if kind != f.kind:
                    problems.append(f"{name}.{f.name}: {spell(f.kind)} in C, {spell(kind)} in "
                                    f"{where}")
            for extra in (n for n in py_order if n not in c_order):
                problems.append(f"{where}.{extra} is not a field of struct {name}")
            common = [n for n in py_order if n in c_order]
            if common != [n for n in c_order if n in py_fields]:
                problems.append(f"{where}: fields in the order {common}, struct {name} has "
                                f"{c_order}")
    return problems


def _mirrors() -> dict[type, str]:
    if str(PYTHON) not in sys.path:
        sys.path.insert(0, str(PYTHON))
    return py_structs(PACKAGE)


class Layout(unittest.TestCase):
    def test_every_struct_of_the_headers_has_an_exact_mirror(self) -> None:
        c, mirrors = c_structs(INCLUDE), _mirrors()
        self.assertTrue(c and mirrors, "no struct read from the headers, or no mirror found")
        self.assertEqual(mismatches(c, mirrors), [])


class LayoutCheckFails(unittest.TestCase):
    """The check above fails on the changes a later ABI makes to a header but not to Python."""

    def setUp(self) -> None:
        self.work = tempfile.TemporaryDirectory()
        self.include = Path(self.work.name) / "include"

    def tearDown(self) -> None:
        self.work.cleanup()

    def test_a_field_added_to_a_header_only(self) -> None:
        shutil.copytree(INCLUDE, self.include)
        before, mirrors = c_structs(INCLUDE), _mirrors()
        name = next(n for n in before if n in {struct_name(cls) for cls in mirrors})
        where = next(w for cls, w in mirrors.items() if struct_name(cls) == name)
        header = self.include / "tempo" / before[name].where.split(":")[0]
        text, n = re.subn(rf"(struct {name} {{[^}}]*?)\n}};",
                          r"\1\n  uint32_t added_field;\n};", header.read_text())
        self.assertEqual(n, 1, f"struct {name} in {header}")
        header.write_text(text)
        after = c_structs(self.include)[name]
        problems = mismatches(c_structs(self.include), mirrors)
        self.assertIn(f"{name}.added_field (uint32 at offset {after.fields[-1].offset}) is not "
                      f"in {where}: add it to _fields_", problems)
        self.assertIn(f"struct {name}: sizeof is {after.size} in C, {before[name].size} in "
                      f"{where}", problems)

    def test_a_struct_added_in_a_new_header_only(self) -> None:
        shutil.copytree(INCLUDE, self.include)
        (self.include / "tempo" / "tempo_added.h").write_text(
            "#include <stdint.h>\nstruct tempo_added_thing { uint64_t a; int32_t b; };\n")
        self.assertEqual(mismatches(c_structs(self.include), _mirrors()),
                         ["struct tempo_added_thing (tempo_added.h:2) has no ctypes mirror in "
                          "libtempo/python/tempokv: add TempoAddedThing or AddedThing with its "
                          "2 fields"])

    def probe(self, c_body: str, fields: list) -> list[str]:
        """mismatches() of a header holding struct tempo_probe against a class Probe."""
        (self.include / "tempo").mkdir(parents=True)
        (self.include / "tempo" / "tempo.h").write_text(
            f"#include <stdint.h>\nstruct tempo_probe {{\n{c_body}}};\n")
        probe = type("Probe", (ctypes.Structure,), {"_fields_": fields})
        return mismatches(c_structs(self.include), {probe: "probe.Probe"})

    U64, U32, I32, U16 = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint16

    def test_the_probe_matches_as_written(self) -> None:
        self.assertEqual(self.probe("  uint64_t a;\n  int32_t status;\n  uint32_t reserved;\n",
                                    [("a", self.U64), ("status", self.I32),
                                     ("reserved", self.U32)]), [])

    def test_a_reserved_word_split_in_two_keeps_the_size_and_still_fails(self) -> None:
        self.assertEqual(
            self.probe("  uint64_t a;\n  int32_t status;\n  uint16_t flags;\n"
                       "  uint16_t reserved;\n",
                       [("a", self.U64), ("status", self.I32), ("reserved", self.U32)]),
            ["tempo_probe.flags (uint16 at offset 12) is not in probe.Probe: add it to _fields_",
             "tempo_probe.reserved: offset 14 in C, 12 in probe.Probe",
             "tempo_probe.reserved: uint16 in C, uint32 in probe.Probe"])

    def test_a_signedness_change(self) -> None:
        self.assertEqual(self.probe("  uint64_t a;\n  uint32_t status;\n  uint32_t reserved;\n",
                                    [("a", self.U64), ("status", self.I32),
                                     ("reserved", self.U32)]),
                         ["tempo_probe.status: uint32 in C, int32 in probe.Probe"])

    def test_fields_in_another_order(self) -> None:
        self.assertEqual(self.probe("  uint32_t x;\n  uint32_t y;\n",
                                    [("y", self.U32), ("x", self.U32)]),
                         ["tempo_probe.x: offset 0 in C, 4 in probe.Probe",
                          "tempo_probe.y: offset 4 in C, 0 in probe.Probe",
                          "probe.Probe: fields in the order ['y', 'x'], struct tempo_probe has "
                          "['x', 'y']"])

    def test_an_opaque_handle_is_a_void_pointer(self) -> None:
        self.assertEqual(self.probe("  struct tempo_ctx* ctx;\n  const struct tempo_probe* next;\n",
                                    [("ctx", ctypes.c_void_p), ("next", ctypes.c_void_p)]),
                         ["tempo_probe.next: pointer to struct tempo_probe in C, pointer to void "
                          "in probe.Probe"])

    def test_pointers_arrays_and_a_field_python_has_alone(self) -> None:
        self.assertEqual(
            self.probe("  const char* name;\n  uint64_t words[2];\n",
                       [("name", ctypes.c_void_p), ("words", self.U64 * 3), ("extra", self.U32)]),
            ["struct tempo_probe: sizeof is 24 in C, 40 in probe.Probe",
             "tempo_probe.name: pointer to char in C, pointer to void in probe.Probe",
             "tempo_probe.words: uint64[2] in C, uint64[3] in probe.Probe",
             "probe.Probe.extra is not a field of struct tempo_probe"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
