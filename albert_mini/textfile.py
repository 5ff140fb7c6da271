"""Reading the text files users give: UTF-8 only, and an error naming the file, the byte offset and the fix."""

from __future__ import annotations

import codecs
import shlex
from pathlib import Path


def read_utf8(path: str | Path, error: type[Exception], allow_bom: bool = False, start: int = 0,
              end: int | None = None) -> str:
    """The text of a UTF-8 file (or of its bytes [start, end): the token cache reads a large file in pieces);
    `error(message)` naming the file, the offending byte's offset in the file and how to convert it.

    A NUL byte is refused too: it decodes, but it means a binary (or UTF-16) file, whose "text" would be noise.
    `allow_bom` drops a leading UTF-8 byte-order mark (as Windows tools write before JSON and TSV files).
    """
    path = Path(path)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read() if end is None else f.read(end - start)
    return decode_utf8(data, path, error, allow_bom, start)


def decode_utf8(data: bytes, path: str | Path, error: type[Exception], allow_bom: bool = False,
                start: int = 0) -> str:
    """`read_utf8` of bytes already read from `path` at offset `start` (the token cache checks a piece's bytes
    against its digest before decoding them, so that what it encodes is what it hashed)."""
    path = Path(path)
    skip = len(codecs.BOM_UTF8) if allow_bom and start == 0 and data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        offset = start + skip + err.start
        converted = path.with_name(f"{path.stem}.utf8{path.suffix}")
        if start == 0 and data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise error(
                f"{path} is UTF-16 text (it starts with a UTF-16 byte-order mark); convert it with `iconv -f utf-16 "
                f"-t utf-8 {shlex.quote(str(path))} > {shlex.quote(str(converted))}` and use that file"
            ) from None
        raise error(
            f"{path} is not UTF-8 text: byte 0x{data[skip + err.start]:02x} at byte offset {offset} (line "
            f"{_line_at(path, offset, data, start)}) cannot be decoded. If it is Latin-1 text, convert it with "
            f"`iconv -f latin1 -t utf-8 {shlex.quote(str(path))} > {shlex.quote(str(converted))}` and use that "
            "file; if it is not text, leave it out"
        ) from None
    nul = data.find(b"\0", skip)
    if nul >= 0:
        line = _line_at(path, start + nul, data, start)
        raise error(
            f"{path} holds a NUL byte at byte offset {start + nul} (line {line}): it is a "
            f"binary file, or UTF-16 text (convert that with `iconv -f utf-16 -t utf-8 {shlex.quote(str(path))}`); "
            "leave binary files out"
        )
    return text


def universal_newlines(text: str) -> str:
    """`text` with CRLF (Windows) and lone CR (old Mac) line ends read as LF, as Python's text mode reads them.

    The corpus reader applies it before looking for blank lines (text.corpus.paragraphs_of_text), so a CRLF file
    gives the documents and paragraphs its LF twin gives."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _line_at(path: Path, offset: int, data: bytes, start: int) -> int:
    """The line of the file holding byte `offset`, where `data` are its bytes from `start` (a piece read from the
    middle of a file counts the lines before it by reading them: this is only for an error message)."""
    if start == 0:
        return data.count(b"\n", 0, offset) + 1
    with open(path, "rb") as f:
        return f.read(start).count(b"\n") + data.count(b"\n", 0, offset - start) + 1
