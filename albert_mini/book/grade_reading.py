"""Reading what a student's sandbox wrote, and the class folder's names, without trusting either.

Everything here is the student's to set: the answer files, the run's report, the files beside a notebook, the
names of folders. So a file is opened only if it is a regular file (never a FIFO, device or link), its size is
checked before it is read, an array's shape and dtype are checked (from its header) before anything is allocated,
and JSON is parsed only below a size limit and a nesting depth. What cannot be read is an `Unreadable` with the
reason, which becomes that exercise's row; it never stops the class. Names and messages are made printable and
capped before they reach the gradebook.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

MAX_JSON_BYTES = 5_000_000  # an answer's records: 60,000 tagged numbers are under 1 MB
MAX_ARRAY_ELEMENTS = 5_000_000  # per exercise's answers, as the kernel's encoder refuses more
MAX_ARRAY_MEMBERS = 50_000  # chapter 6's apply_80_10_10 answers with 8,000 arrays
MAX_BUNDLE_MEMBERS = 4096  # the runner's bundle: two files per exercise, the report and the executed notebook
MESSAGE_LIMIT = 2000  # characters of one gradebook message
ARRAY_KINDS = "biuf"  # bool, signed and unsigned integers, floats: the only dtypes an answer may hold


class Unreadable(ValueError):
    """A file the sandbox wrote that the grader will not read (the reason is the message)."""


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file (not a link, FIFO or device) of at most `limit` bytes."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Unreadable("absent") from None
    except OSError as error:  # a link (ELOOP) or no permission
        raise Unreadable(f"cannot be opened ({os.strerror(error.errno or 0) or type(error).__name__})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Unreadable("not a regular file (a FIFO, socket, device or folder)")
        if status.st_size > limit:
            raise Unreadable(f"{status.st_size:,} bytes, over the limit of {limit:,}")
    except BaseException:
        os.close(descriptor)
        raise
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Unreadable(f"grew past the limit of {limit:,} bytes while read")
    return data


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in `path` (read as `read_regular` does); Unreadable if absent, too large, deep or not JSON."""
    return parse_json(read_regular(path, limit))


def parse_json(data: bytes) -> Any:
    """The JSON value of `data` (bytes already within their size limit); Unreadable if deep or not JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise Unreadable("JSON nested too deep") from None
    except ValueError as error:  # not UTF-8, not JSON, an integer of too many digits
        raise Unreadable(f"not valid JSON ({str(error)[:100]})") from None


def read_arrays(path: Path, key: str = r"v\d{1,7}", max_elements: int = MAX_ARRAY_ELEMENTS) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` written by `np.savez` (stored, not compressed), keys matching `key`, every array
    of a numeric dtype, their headers checked before any array is allocated; Unreadable otherwise."""
    return parse_arrays(read_regular(path, array_file_bytes(max_elements)), key, max_elements)


def array_file_bytes(max_elements: int = MAX_ARRAY_ELEMENTS) -> int:
    """The largest .npz an answer of `max_elements` numbers makes (8 bytes each, and the headers)."""
    return 8 * max_elements + 4_000_000


def _zip(data: bytes, what: str) -> zipfile.ZipFile:
    """`data` as a zip of at most MAX_ARRAY_MEMBERS members, its directory checked before zipfile reads it."""
    end = data[-22:]
    if len(end) < 22 or end[:4] != b"PK\x05\x06" or end[20:22] != b"\0\0":
        raise Unreadable(f"not {what} (no zip directory at its end)")
    if int.from_bytes(end[10:12], "little") > MAX_ARRAY_MEMBERS:
        raise Unreadable(f"more than {MAX_ARRAY_MEMBERS} members")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError) as error:
        raise Unreadable(f"a broken zip file ({str(error)[:100]})") from None
    return archive


def read_bundle(path: Path, limit: int, wanted: dict[str, int]) -> dict[str, bytes | Unreadable]:
    """The members named in `wanted` (name -> its size limit) of the zip the sandbox's runner packed (a regular
    file of at most `limit` bytes, members stored): each one's bytes, or why it was not read; others untouched."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        raise Unreadable("the runner's bundle is absent") from None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit or status.st_size < 22:
            raise Unreadable(f"the runner's bundle is not a regular file of 22 to {limit:,} bytes")
        handle.seek(-22, os.SEEK_END)
        end = handle.read(22)
        if end[:4] != b"PK\x05\x06" or end[20:22] != b"\0\0":
            raise Unreadable("the runner's bundle has no zip directory at its end")
        if int.from_bytes(end[10:12], "little") > MAX_BUNDLE_MEMBERS:
            raise Unreadable(f"the runner's bundle has more than {MAX_BUNDLE_MEMBERS} members")
        handle.seek(0)
        found: dict[str, bytes | Unreadable] = {}
        try:
            archive = zipfile.ZipFile(handle)
            for member in archive.infolist():
                if member.filename not in wanted or member.filename in found:
                    continue
                if member.compress_type != zipfile.ZIP_STORED or member.file_size > wanted[member.filename]:
                    found[member.filename] = Unreadable(f"{member.file_size:,} bytes, over the limit of "
                                                        f"{wanted[member.filename]:,}, or compressed")
                    continue
                with archive.open(member) as opened:
                    found[member.filename] = opened.read(member.file_size)
        except (zipfile.BadZipFile, ValueError, EOFError, OSError, RuntimeError) as error:
            raise Unreadable(f"the runner's bundle is a broken zip ({str(error)[:100]})") from None
    return found


def parse_arrays(data: bytes, key: str = r"v\d{1,7}", max_elements: int = MAX_ARRAY_ELEMENTS) -> dict[str, np.ndarray]:
    """The arrays of `data`, an .npz as `read_arrays` takes it."""
    archive = _zip(data, "an .npz written by numpy.savez")
    members = archive.infolist()
    arrays: dict[str, np.ndarray] = {}
    left = max_elements
    for member in members:
        name = member.filename.removesuffix(".npy")
        if not re.fullmatch(key, name) or not member.filename.endswith(".npy") or name in arrays:
            raise Unreadable(f"an array named {member.filename[:40]!r}, not one of the answer's")
        if member.compress_type != zipfile.ZIP_STORED:
            raise Unreadable(f"{member.filename} is compressed; answers are written uncompressed")
        try:
            with archive.open(member) as handle:
                array = _read_npy(handle, member.file_size, left)
        except Unreadable as problem:
            raise Unreadable(f"{member.filename}: {problem}") from None
        except (zipfile.BadZipFile, ValueError, EOFError, OSError) as error:
            raise Unreadable(f"{member.filename}: unreadable ({str(error)[:100]})") from None
        left -= array.size
        arrays[name] = array
    return arrays


def _read_npy(handle, size: int, left: int) -> np.ndarray:
    """One `.npy` member: its header read and checked, then exactly the bytes it declares."""
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle, max_header_size=10_000)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle, max_header_size=10_000)
    else:
        raise Unreadable(f"npy format version {version}")
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None or dtype.itemsize > 8:
        raise Unreadable(f"an array of dtype {dtype}; answers hold numbers only")
    if len(shape) > 32 or any(type(n) is not int or n < 0 for n in shape):
        raise Unreadable(f"an array of shape {str(shape)[:60]}")
    count = math.prod(shape)
    if count > left:
        raise Unreadable(f"an array of {count:,} numbers, over the limit of {MAX_ARRAY_ELEMENTS:,} for an answer")
    body = handle.read(count * dtype.itemsize + 1)
    if len(body) != count * dtype.itemsize or count * dtype.itemsize > size:
        raise Unreadable(f"holds {len(body):,} bytes where its header declares {count * dtype.itemsize:,}")
    return np.frombuffer(body, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C").copy()


# --------------------------------------------------------------------------------------------- the run's report
STATUSES = ("done", "timeout", "crashed", "kernel-start")


def clean_report(data: Any, cells: int) -> dict:
    """The runner's report.json, keeping only well-formed fields (the student's code could rewrite the file)."""
    if not isinstance(data, dict):
        return {}
    report: dict = {}
    if data.get("status") in STATUSES:
        report["status"] = data["status"]
    if type(data.get("cell")) is int and 0 <= data["cell"] < cells:
        report["cell"] = data["cell"]
    if type(data.get("detail")) is str:
        report["detail"] = data["detail"][:300]
    errors = data.get("errors")
    if type(errors) is list:
        report["errors"] = [[entry[0], entry[1][:300]] for entry in errors[:cells]
                            if type(entry) is list and len(entry) == 2 and type(entry[0]) is int
                            and 0 <= entry[0] < cells and type(entry[1]) is str]
    return report


# --------------------------------------------------------------------------------------------- names and messages
def printable(text: str) -> str:
    """`text` as a spreadsheet can show it: bytes that are not UTF-8 (a name from a Windows zip) as \\xNN, and
    control or other unprintable characters as escapes."""
    if any("\udc80" <= c <= "\udcff" for c in text):  # undecodable bytes of a file name (surrogateescape)
        text = os.fsencode(text).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() or c == " " else _escape(c) for c in text)


def _escape(character: str) -> str:
    if unicodedata.category(character) == "Cs":
        return f"\\u{ord(character):04x}"
    return character.encode("unicode_escape").decode("ascii")


def capped(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """`message` cut to at most `limit` characters, saying that it was cut and how long it was."""
    if len(message) <= limit:
        return message
    note = f" [cut: {len(message):,} characters in all]"
    return message[: limit - len(note)] + note
