"""Reading the text files users give: UTF-8 only, and an error naming the file, the byte offset and the fix."""

from __future__ import annotations

import codecs
import shlex
from pathlib import Path


def read_utf8(path: str | Path, error: type[Exception], allow_bom: bool = False) -> str:
    """The text of a UTF-8 file; `error(message)` naming the file, the offending byte and how to convert it.

    A NUL byte is refused too: it decodes, but it means a binary (or UTF-16) file, whose "text" would be noise.
    `allow_bom` drops a leading UTF-8 byte-order mark (as Windows tools write before JSON and TSV files).
    """
    path = Path(path)
    data = path.read_bytes()
    start = len(codecs.BOM_UTF8) if allow_bom and data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as err:
        offset = start + err.start
        converted = path.with_name(f"{path.stem}.utf8{path.suffix}")
        raise error(
            f"{path} is not UTF-8 text: byte 0x{data[offset]:02x} at byte offset {offset} (line "
            f"{_line_at(data, offset)}) cannot be decoded. If it is Latin-1 text, convert it with "
            f"`iconv -f latin1 -t utf-8 {shlex.quote(str(path))} > {shlex.quote(str(converted))}` and use that "
            "file; if it is not text, leave it out"
        ) from None
    nul = data.find(b"\0", start)
    if nul >= 0:
        raise error(
            f"{path} holds a NUL byte at byte offset {nul} (line {_line_at(data, nul)}): it is a binary file, or "
            f"UTF-16 text (convert that with `iconv -f utf-16 -t utf-8 {shlex.quote(str(path))}`); leave binary "
            "files out"
        )
    return text


def universal_newlines(text: str) -> str:
    """`text` with CRLF (Windows) and lone CR (old Mac) line ends read as LF, as Python's text mode reads them.

    The corpus reader applies it before looking for blank lines (text.corpus.paragraphs_of_text), so a CRLF file
    gives the documents and paragraphs its LF twin gives."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1
