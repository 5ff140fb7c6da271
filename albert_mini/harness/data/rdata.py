"""Read R's serialized data (XDR format, versions 2 and 3) with the standard library only.

This covers the subset that data packages such as janeaustenr use: character, integer, double, logical and
raw vectors, lists, pairlists (attributes), symbols and ALTREP compact sequences. A lazy-load database
(`Rdata.rdx` + `Rdata.rdb`, how an installed R package keeps its datasets) is read by `read_lazyload_db`.
Anything else (closures, environments, S4 objects, byte code) raises `RDataError` naming the R type.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib
from pathlib import Path

from ...errors import MissingFileError, UserError

# SEXP type codes (R's Rinternals.h) and the pseudo-types of serialize.c.
NILSXP, SYMSXP, LISTSXP, CHARSXP, LGLSXP, INTSXP, REALSXP, CPLXSXP, STRSXP = 0, 1, 2, 9, 10, 13, 14, 15, 16
VECSXP, EXPRSXP, RAWSXP = 19, 20, 24
ATTRLISTSXP, ALTREP_SXP, EMPTYENV_SXP, BASEENV_SXP = 239, 238, 242, 241
GLOBALENV_SXP, NILVALUE_SXP, REFSXP = 253, 254, 255
TYPE_NAMES = {3: "closure", 4: "environment", 5: "promise", 6: "language", 7: "special", 8: "builtin",
              17: "dots", 21: "bytecode", 22: "external pointer", 23: "weak reference", 25: "S4 object",
              247: "persistent reference", 248: "package environment", 249: "namespace"}
NA_INTEGER = -(2**31)  # R's NA for integers and logicals
IS_OBJECT, HAS_ATTR, HAS_TAG = 1 << 8, 1 << 9, 1 << 10
UTF8_MASK, LATIN1_MASK = 1 << 3, 1 << 2


class RDataError(UserError, ValueError):
    """Bytes that are not R serialization, or an R type this reader does not support."""


class RVector(list):
    """An R vector or list as a Python list, with its R type name and attributes (e.g. `names`) kept."""

    def __init__(self, values, rtype: str, attributes: dict | None = None):
        super().__init__(values)
        self.rtype = rtype
        self.attributes = attributes or {}

    @property
    def names(self) -> list[str] | None:
        return self.attributes.get("names")


class RSymbol(str):
    """An R symbol (a name), kept apart from character strings."""


class _Reader:
    """A cursor over one XDR stream; `item()` reads one serialized R object."""

    def __init__(self, data: bytes):
        self.data, self.pos, self.refs = data, 0, []

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise RDataError(f"R data ends early: wanted {n} bytes at offset {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def length(self) -> int:
        n = self.int()
        if n == -1:  # long vector: the length follows as two 32-bit halves
            upper, lower = struct.unpack(">II", self.take(8))
            n = (upper << 32) + lower
        return n

    def header(self) -> None:
        magic = self.take(2)
        if magic != b"X\n":
            raise RDataError(f"not XDR R serialization (starts with {magic!r}); save with R's default format")
        version = self.int()
        self.take(8)  # R version that wrote the data, oldest version that can read it
        if version == 3:
            self.take(self.int())  # the writer's native encoding, e.g. "UTF-8"
        elif version != 2:
            raise RDataError(f"unsupported R serialization version {version}; only 2 and 3 exist")

    def item(self):
        flags = self.int()
        sexptype, levels = flags & 0xFF, flags >> 12
        if sexptype == NILVALUE_SXP:
            return None
        if sexptype in (EMPTYENV_SXP, BASEENV_SXP, GLOBALENV_SXP):
            return {EMPTYENV_SXP: "<emptyenv>", BASEENV_SXP: "<baseenv>", GLOBALENV_SXP: "<globalenv>"}[sexptype]
        if sexptype == REFSXP:
            index = (flags >> 8) or self.int()
            return self.refs[index - 1]
        if sexptype == SYMSXP:
            symbol = RSymbol(self.item())
            self.refs.append(symbol)
            return symbol
        if sexptype in (LISTSXP, ATTRLISTSXP):
            return self.pairlist(flags)
        if sexptype == CHARSXP:
            return self.charsxp(levels)
        if sexptype == ALTREP_SXP:
            return self.altrep()
        if sexptype in (LGLSXP, INTSXP):
            n = self.length()
            ints = struct.unpack(f">{n}i", self.take(4 * n))
            values = [None if v == NA_INTEGER else (bool(v) if sexptype == LGLSXP else v) for v in ints]
            rtype = "logical" if sexptype == LGLSXP else "integer"
        elif sexptype == REALSXP:
            n = self.length()
            values = list(struct.unpack(f">{n}d", self.take(8 * n)))
            rtype = "double"
        elif sexptype == STRSXP:
            values, rtype = [self.item() for _ in range(self.length())], "character"
        elif sexptype in (VECSXP, EXPRSXP):
            values, rtype = [self.item() for _ in range(self.length())], "list"
        elif sexptype == RAWSXP:
            values, rtype = list(self.take(self.length())), "raw"
        else:
            name = TYPE_NAMES.get(sexptype, f"SEXP type {sexptype}")
            raise RDataError(f"R {name} objects are not supported by this reader (only data vectors and lists)")
        attributes = self.item() if flags & HAS_ATTR else None
        return RVector(values, rtype, attributes)

    def charsxp(self, levels: int):
        n = self.int()
        if n == -1:
            return None  # NA_character_
        raw = self.take(n)
        return raw.decode("latin-1" if levels & LATIN1_MASK else "utf-8")

    def pairlist(self, flags: int) -> dict | list:
        """A pairlist as a dict when every cell has a tag (attributes do), else as a list."""
        cells = []
        while True:
            if flags & HAS_ATTR:
                self.item()  # attributes of a pairlist cell carry nothing the data needs
            tag = self.item() if flags & HAS_TAG else None
            cells.append((tag, self.item()))
            flags = self.int()
            if flags & 0xFF not in (LISTSXP, ATTRLISTSXP):
                self.pos -= 4  # the CDR is not another cell: read it as an ordinary item
                tail = self.item()
                if tail is not None:
                    raise RDataError("dotted pairlists (a CDR that is not a list) are not supported")
                break
        if all(tag is not None for tag, _ in cells):
            return {str(tag): value for tag, value in cells}
        return [value for _, value in cells]

    def altrep(self):
        """ALTREP objects: compact integer/real sequences and wrappers, expanded into ordinary vectors."""
        info, state, attributes = self.item(), self.item(), self.item()
        class_name = str(info[0])
        if class_name in ("compact_intseq", "compact_realseq"):
            n, start, step = state
            values = [start + i * step for i in range(int(n))]
            if class_name == "compact_intseq":
                values = [int(v) for v in values]
            return RVector(values, "integer" if class_name == "compact_intseq" else "double", attributes)
        if class_name.startswith("wrap_"):
            wrapped = state[0]
            return RVector(wrapped, wrapped.rtype, attributes or wrapped.attributes)
        raise RDataError(f"ALTREP class {class_name!r} is not supported by this reader")


def unserialize(data: bytes):
    """Decode one R object from XDR serialization bytes (no compression framing)."""
    reader = _Reader(data)
    reader.header()
    return reader.item()


def read_rds(path: str | Path):
    """Read an `.rds` file (gzip-compressed or plain XDR serialization of one R object)."""
    data = Path(path).read_bytes()
    return unserialize(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def decompress_rdb_entry(blob: bytes, compressed: int) -> bytes:
    """Undo the framing of one lazy-load DB entry: 4-byte big-endian length, then the compressed payload."""
    if len(blob) < 5:
        raise RDataError(f"lazy-load entry of {len(blob)} bytes is too short to hold a length and a payload")
    expected = struct.unpack(">I", blob[:4])[0]
    payload = blob[4:]
    if compressed == 1:  # plain zlib (R's default)
        data = zlib.decompress(payload)
    else:  # bzip2/xz databases mark each entry with a type byte
        kind, payload = payload[:1], payload[1:]
        if kind == b"Z":
            data = lzma.decompress(payload, format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2,
                                                                              "preset": 9 | lzma.PRESET_EXTREME}])
        elif kind == b"2":
            data = bz2.decompress(payload)
        elif kind == b"1":
            data = zlib.decompress(payload)
        elif kind == b"0":
            data = payload
        else:
            raise RDataError(f"unknown lazy-load compression type byte {kind!r}")
    if len(data) != expected:
        raise RDataError(f"lazy-load entry decompressed to {len(data)} bytes, its header says {expected}")
    return data


def read_lazyload_db(rdx_path: str | Path) -> dict[str, object]:
    """All variables of an R lazy-load database (`X.rdx` index plus `X.rdb` data next to it), by name."""
    rdx_path = Path(rdx_path)
    rdb_path = rdx_path.with_suffix(".rdb")
    for path in (rdx_path, rdb_path):
        if not path.is_file():
            raise MissingFileError(f"lazy-load database file {path} does not exist")
    index = read_rds(rdx_path)
    if not isinstance(index, RVector) or index.names is None or "variables" not in index.names:
        raise RDataError(f"{rdx_path} is not a lazy-load index (no 'variables' entry)")
    fields = dict(zip(index.names, index))
    compressed = int(fields.get("compressed", [1])[0])
    variables = fields["variables"]
    rdb = rdb_path.read_bytes()
    result = {}
    for name, (offset, length) in zip(variables.names, variables):
        if offset + length > len(rdb):
            raise RDataError(f"{rdb_path} is truncated: {name!r} needs bytes {offset}..{offset + length}")
        result[name] = unserialize(decompress_rdb_entry(rdb[offset:offset + length], compressed))
    return result
