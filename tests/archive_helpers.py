"""Archives built in memory, for the tests of code that reads downloads (.deb, sdist)."""

from __future__ import annotations

import io
import tarfile


def tar_gz(files: dict[str, bytes]) -> bytes:
    """A gzipped tar holding `files` (name -> bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
