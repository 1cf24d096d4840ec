"""Safe reading of an uploaded trace: `.json`, `.json.gz`, or a `.zip` / `.tar.gz` with one file
per rank (members may themselves be `.json.gz`).

The container is recognised by its first bytes, not its name. Decompression is streamed in chunks
and stops the moment the output passes the size cap or the compression ratio passes the ratio cap,
so a zip bomb costs at most `max_unpacked_bytes` of memory. Archive members with absolute paths,
`..` components, links or device entries reject the whole upload. Every failure raises TraceError
with a message for the user; nothing is returned half-read.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import orjson

from .convert import assemble
from .errors import TraceError
from .kineto import RankTrace, parse, split_ranks

CHUNK = 1 << 16
RATIO_FLOOR = 1 << 20  # below 1 MiB of output the ratio is not judged (tiny files compress well)
_NON_SPACE = re.compile(rb"\S")  # the first byte of a document that is not white space


@dataclass(frozen=True)
class Limits:
    max_upload_bytes: int = 64 << 20
    max_unpacked_bytes: int = 512 << 20
    max_ratio: int = 60
    max_ranks: int = 64
    max_events: int = 1_500_000


def _mb(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MiB"


class _Budget:
    """Counts bytes produced against the caps for the whole upload."""

    def __init__(self, limits: Limits, compressed: int):
        self.limits = limits
        self.compressed = max(compressed, 1)
        self.out = 0

    def add(self, n: int, what: str) -> None:
        self.out += n
        lim = self.limits
        if self.out > lim.max_unpacked_bytes:
            raise TraceError(
                f"{what}: more than {_mb(lim.max_unpacked_bytes)} once decompressed, which is over "
                "this server's limit."
            )
        if self.out > RATIO_FLOOR and self.out > lim.max_ratio * self.compressed:
            raise TraceError(
                f"{what}: decompresses more than {lim.max_ratio}:1, which looks like a "
                "decompression bomb, not a trace."
            )


def _gunzip(data: bytes, budget: _Budget, what: str) -> bytes:
    """Streamed gzip decompression (multi-member aware) under the budget."""
    out = bytearray()
    src = data
    while src:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pos = 0
        while pos < len(src) or d.unconsumed_tail:
            chunk = d.unconsumed_tail or src[pos : pos + CHUNK]
            if not d.unconsumed_tail:
                pos += len(chunk)
            try:
                piece = d.decompress(chunk, CHUNK)
            except zlib.error as e:
                raise TraceError(f"{what}: the gzip data is damaged ({e}).") from None
            budget.add(len(piece), what)
            out += piece
            if d.eof:
                break
        if not d.eof:
            raise TraceError(f"{what}: the gzip file is truncated (it ends before its last block).")
        rest = d.unused_data + src[pos:]
        src = rest.lstrip(b"\0") if rest.strip(b"\0") else b""
        if src and src[:2] != b"\x1f\x8b":
            raise TraceError(f"{what}: unexpected bytes after the gzip data.")
    return bytes(out)


class _GunzipStream(io.RawIOBase):
    """A readable stream of gunzipped bytes under the budget (for tar)."""

    def __init__(self, raw: BinaryIO, budget: _Budget, what: str):
        self.raw, self.budget, self.what = raw, budget, what
        self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.buf = b""
        self.done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self.buf and not self.done:
            chunk = self.d.unconsumed_tail or self.raw.read(CHUNK)
            if not chunk:
                if not self.d.eof:
                    raise TraceError(f"{self.what}: the gzip file is truncated.")
                self.done = True
                break
            try:
                self.buf = self.d.decompress(chunk, CHUNK)
            except zlib.error as e:
                raise TraceError(f"{self.what}: the gzip data is damaged ({e}).") from None
            self.budget.add(len(self.buf), self.what)
            if self.d.eof:
                self.done = True
        n = min(len(b), len(self.buf))
        b[:n] = self.buf[:n]
        self.buf = self.buf[n:]
        return n


def _safe_member(name: str) -> str | None:
    """The member's path if it is a plain relative path; None for entries to skip (folders, macOS
    resource forks, hidden files); TraceError for absolute paths or '..'."""
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise TraceError(f"The archive contains an unsafe path ({name!r}); nothing was stored.")
    norm = posixpath.normpath(name)
    if norm.startswith("..") or "/../" in f"/{norm}/" or name.split("/").count("..") or norm == ".":
        raise TraceError(f"The archive contains an unsafe path ({name!r}); nothing was stored.")
    base = posixpath.basename(norm)
    if name.endswith("/") or base.startswith(".") or norm.startswith("__MACOSX"):
        return None
    return norm


def _read_capped(f, budget: _Budget, what: str) -> bytes:
    out = bytearray()
    while True:
        piece = f.read(CHUNK)
        if not piece:
            return bytes(out)
        budget.add(len(piece), what)
        out += piece


def _maybe_gunzip(name: str, data: bytes, budget: _Budget) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return _gunzip(data, budget, name)
    return data


def _members_zip(data: bytes, budget: _Budget, limits: Limits) -> Iterator[tuple[str, bytes]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError) as e:
        # a directory whose offsets point before the start or past the end of the file
        raise TraceError(f"The zip file cannot be read ({e}).") from None
    infos = zf.infolist()
    files = []
    declared = 0
    for info in infos:
        path = _safe_member(info.filename)
        if path is None or info.is_dir():
            continue
        mode = (info.external_attr >> 16) & 0o170000
        if mode and mode != 0o100000:
            raise TraceError(
                f"The archive member {info.filename!r} is a link or a device; nothing was stored."
            )
        declared += info.file_size
        if info.file_size > limits.max_unpacked_bytes or declared > limits.max_unpacked_bytes:
            raise TraceError(
                f"The archive says it unpacks to more than {_mb(limits.max_unpacked_bytes)}, over "
                "this server's limit."
            )
        if info.file_size > RATIO_FLOOR and info.file_size > limits.max_ratio * max(
            info.compress_size, 1
        ):
            raise TraceError(
                f"{info.filename}: compressed more than {limits.max_ratio}:1, which looks like a "
                "decompression bomb, not a trace."
            )
        files.append((path, info))
    if len(files) > limits.max_ranks:
        raise TraceError(
            f"The archive holds {len(files)} files; at most {limits.max_ranks} ranks are accepted."
        )
    for path, info in files:
        try:
            with zf.open(info) as f:
                raw = _read_capped(f, budget, path)  # actual bytes counted: declared sizes can lie
        except (
            zipfile.BadZipFile,
            zlib.error,
            EOFError,
            NotImplementedError,
            RuntimeError,
            ValueError,
            OSError,
        ) as e:
            raise TraceError(f"{path}: cannot be unpacked ({e}).") from None
        yield path, _maybe_gunzip(path, raw, budget)


def _members_tar(
    raw: BinaryIO, budget: _Budget, limits: Limits, gz: bool
) -> Iterator[tuple[str, bytes]]:
    stream = io.BufferedReader(_GunzipStream(raw, budget, "the .tar.gz")) if gz else raw
    n = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tf:
            for m in tf:
                path = _safe_member(m.name)
                if m.isdir() or path is None:
                    continue
                if not m.isfile():
                    raise TraceError(
                        f"The archive member {m.name!r} is a link or a device; nothing was stored."
                    )
                n += 1
                if n > limits.max_ranks:
                    raise TraceError(
                        f"The archive holds more than {limits.max_ranks} files; at most "
                        f"{limits.max_ranks} ranks are accepted."
                    )
                if m.size > limits.max_unpacked_bytes:
                    raise TraceError(f"{path}: larger than {_mb(limits.max_unpacked_bytes)}.")
                f = tf.extractfile(m)
                if f is None:
                    continue
                data = f.read()  # already counted by the gunzip stream
                yield path, _maybe_gunzip(path, data, budget)
    except tarfile.TarError as e:
        raise TraceError(f"The tar archive cannot be read ({e}).") from None


def _looks_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def read_files(name: str, fileobj: BinaryIO, limits: Limits) -> list[tuple[str, bytes]]:
    """The JSON documents in an upload, (member name, bytes) each, under the limits."""
    data = fileobj.read(limits.max_upload_bytes + 1)
    if len(data) > limits.max_upload_bytes:
        raise TraceError(
            f"The file is larger than {_mb(limits.max_upload_bytes)}, this server's upload limit."
        )
    if not data.strip():
        raise TraceError("The file is empty.")
    budget = _Budget(limits, len(data))
    if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
        files = list(_members_zip(data, budget, limits))
    elif data[:2] == b"\x1f\x8b":
        # .json.gz or .tar.gz: peek at the first block to tell
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            head = d.decompress(data[:CHUNK], 512)
        except zlib.error as e:
            raise TraceError(f"{name}: the gzip data is damaged ({e}).") from None
        if _looks_tar(head):
            files = list(_members_tar(io.BytesIO(data), budget, limits, gz=True))
        else:
            files = [(name, _gunzip(data, budget, name))]
    elif _looks_tar(data[:512]):
        budget.add(len(data), name)
        files = list(_members_tar(io.BytesIO(data), budget, limits, gz=False))
    else:
        first = _NON_SPACE.search(data)  # (not data.lstrip(): that copies the whole upload)
        if name.lower().endswith((".gz", ".tgz")) and (first is None or first[0] not in b"{["):
            raise TraceError(
                f"{name}: the name ends in .gz but the file is not gzip data (nor plain JSON). "
                "Upload the file as the profiler wrote it."
            )
        budget.add(len(data), name)
        files = [(name, data)]
    if not files:
        raise TraceError("The archive holds no files.")
    if len(files) > limits.max_ranks:
        raise TraceError(f"{len(files)} files; at most {limits.max_ranks} ranks are accepted.")
    return files


def not_json_message(path: str, error: str, *, in_archive: bool) -> str:
    """What to tell the user about a file that is not JSON. A stray file beside the ranks in an
    archive (a README, a log) is named as such, with what to do, rather than as a JSON syntax
    error at line 1 column 1."""
    if in_archive and not path.lower().endswith((".json", ".gz")):
        return (
            f"{path} in the archive is not a trace (it is not JSON). An archive holds only the "
            f"trace files, one per rank: take {posixpath.basename(path)} out and upload it again."
        )
    hint = " (is it cut off?)" if "unexpected end" in error.lower() else ""
    return f"{path}: not valid JSON{hint}: {error}."


UTF8_BOM = b"\xef\xbb\xbf"


def _without_bom(raw: bytes) -> bytes | memoryview:
    """The JSON text without the UTF-8 byte order mark Windows editors and PowerShell's
    ``Out-File -Encoding utf8`` put in front (orjson refuses it; the JSON is fine). A view, not a
    copy of the whole document."""
    return memoryview(raw)[len(UTF8_BOM) :] if raw.startswith(UTF8_BOM) else raw


def load(name: str, fileobj: BinaryIO, limits: Limits) -> list[RankTrace]:
    """Read, parse and assemble an upload: the ranks, or TraceError."""
    files = read_files(name, fileobj, limits)
    ranks: list[RankTrace] = []
    total = 0
    for i, (path, raw) in enumerate(files):
        files[i] = (path, b"")  # drop our reference as we go: one document in memory at a time
        try:
            obj = orjson.loads(_without_bom(raw))
        except orjson.JSONDecodeError as e:
            raise TraceError(not_json_message(path, str(e), in_archive=path != name)) from None
        del raw
        r = parse(obj, source=path, max_events=limits.max_events - total)
        del obj
        total += r.n
        if total > limits.max_events:
            raise TraceError(f"More than {limits.max_events:,} events in all; this server's limit.")
        ranks.extend(split_ranks(r))  # a merged file: one entry per rank in it
    if len(ranks) > limits.max_ranks:
        raise TraceError(f"{len(ranks)} ranks; at most {limits.max_ranks} are accepted.")
    return assemble(ranks)
