"""A store directory written by someone else (issue 57): anyone who can write there may write
any bytes, with valid CRCs, for real keys. Whatever a record or an entry of ``segments/`` holds,
scoring gives exactly the numbers of a scorer without a store, finishes, raises nothing, and
the store heals: the next scorer reads good vectors back and encodes nothing."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY_BERT, wmt_pairs
from rust_bertscore.store import EmbeddingStore, records

CANDS, REFS = wmt_pairs()
CANDS, REFS = CANDS[:6], REFS[:6]
HEAD = struct.Struct("<4sBBH32sd3IQI")  # the header's fields before its CRC (records.py)

Scores = tuple[np.ndarray, np.ndarray, np.ndarray]
Forge = Callable[[records.Header, np.ndarray], bytes]


def raw_header(
    kind: int, key: bytes, dims: tuple[int, ...], ndim: int, nbytes: int, crc: int
) -> bytes:
    """A header declaring anything (the CRC of its fields made right)."""
    head = HEAD.pack(records.MAGIC, kind, ndim, 0, key, 1.0, *(*dims, 0, 0, 0)[:3], nbytes, crc)
    return records.HEADER.pack(head, zlib.crc32(head))


def vectors(key: bytes, value: np.ndarray) -> bytes:
    """A record of any shape (rank 1 to 4 too), its CRCs right."""
    payload = np.ascontiguousarray(value, np.float32).tobytes()
    return records.pack_header(records.KIND_VECTORS, key, 1.0, value.shape, payload) + payload


def with_value(change: Callable[[np.ndarray], np.ndarray]) -> Forge:
    return lambda head, value: vectors(head.key, change(value.copy()))


def nan(v: np.ndarray) -> np.ndarray:
    v.flat[3] = np.nan
    return v


def inf(v: np.ndarray) -> np.ndarray:
    v.flat[-1] = -np.inf
    return v


def wrong_product(head: records.Header, value: np.ndarray) -> bytes:
    """Shape (rows, hidden + 1) over a (rows, hidden) payload."""
    payload = value.tobytes()
    shape = (*value.shape[:-1], value.shape[-1] + 1)
    return records.pack_header(records.KIND_VECTORS, head.key, 1.0, shape, payload) + payload


def wrapped_product(head: records.Header, value: np.ndarray) -> bytes:
    """2^31 x 2^31 x 4 = 2^64: zero in int64 arithmetic, like the empty payload declared."""
    return raw_header(records.KIND_VECTORS, head.key, (1 << 31, 1 << 31, 4), 3, 0, 0)


def huge_length(head: records.Header, value: np.ndarray) -> bytes:
    """A consistent header declaring 16 TiB, followed by the real payload."""
    dims = (65536, 65536, 1024)
    payload = value.tobytes()
    return (
        raw_header(
            records.KIND_VECTORS, head.key, dims, 3, 4 * 65536 * 65536 * 1024, zlib.crc32(payload)
        )
        + payload
    )


CASES: dict[str, Forge] = {
    "fewer_rows": with_value(lambda v: v[..., :-1, :]),
    "one_row": with_value(lambda v: v[..., :1, :]),
    "more_rows": with_value(lambda v: np.concatenate([v, v[..., -1:, :]], axis=-2)),
    "wider": with_value(lambda v: np.concatenate([v, v[..., :1]], axis=-1)),
    "narrower": with_value(lambda v: v[..., : v.shape[-1] // 2]),
    "rank1": with_value(lambda v: v.ravel()),
    "rank3_one_layer": with_value(lambda v: v[None] if v.ndim == 2 else v[:1]),
    "rank4": with_value(lambda v: v[None, None] if v.ndim == 2 else v[None]),
    "rank2": with_value(lambda v: v if v.ndim == 2 else v[0]),
    "fewer_layers": with_value(lambda v: v[None] if v.ndim == 2 else v[:-1]),
    "nan": with_value(nan),
    "inf": with_value(inf),
    "wrong_product": wrong_product,
    "wrapped_product": wrapped_product,
    "huge_length": huge_length,
}


@pytest.fixture(scope="module")
def want() -> dict[bool, Scores]:
    return {
        al: rb.BERTScorer(model_type=TINY_BERT, cache_bytes=0, all_layers=al).score(CANDS, REFS)
        for al in (False, True)
    }


def scorer(directory: Path, all_layers: bool = False) -> rb.BERTScorer:
    return rb.BERTScorer(
        model_type=TINY_BERT, cache_bytes=0, all_layers=all_layers, store=directory
    )


def fill(directory: Path, all_layers: bool = False) -> Path:
    """A store written by the scorer itself; returns its one segment."""
    first = scorer(directory, all_layers)
    first.score(CANDS, REFS)
    assert first.store is not None
    first.store.close()
    (seg,) = (directory / "segments").glob("*.seg")
    return seg


def walk(raw: bytes) -> list[tuple[int, records.Header]]:
    out, pos = [], 0
    while pos < len(raw):
        head = records.unpack_header(raw[pos : pos + records.HEADER_BYTES])
        assert head is not None
        out.append((pos, head))
        pos += records.HEADER_BYTES + head.nbytes
    return out


def forge(raw: bytes, make: Forge, every: int) -> bytes:
    """The segment with every ``every``-th vectors record replaced by ``make``'s."""
    out = []
    for n, (pos, head) in enumerate(walk(raw)):
        whole = raw[pos : pos + records.HEADER_BYTES + head.nbytes]
        if head.kind == records.KIND_VECTORS and n % every == 0:
            value = records.decode_payload(head, whole[records.HEADER_BYTES :])
            assert value is not None
            whole = make(head, value)
        out.append(whole)
    return b"".join(out)


def check(directory: Path, want: Scores, all_layers: bool = False, *, healed: bool = True) -> None:
    """Scoring gives ``want`` exactly; then (``healed``) a new scorer encodes nothing."""
    got = scorer(directory, all_layers).score(CANDS, REFS)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    if healed:
        again = scorer(directory, all_layers)
        for g, w in zip(again.score(CANDS, REFS), want):
            np.testing.assert_array_equal(g, w)
        assert again.pipeline.vector_source.encoded == 0  # good records read back


@pytest.mark.parametrize("every", [1, 2], ids=["all", "half"])
@pytest.mark.parametrize("all_layers", [False, True], ids=["layer", "all_layers"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forged_record_is_a_miss_and_healed(
    tmp_path: Path, want: dict[bool, Scores], case: str, all_layers: bool, every: int
) -> None:
    seg = fill(tmp_path, all_layers)
    seg.write_bytes(forge(seg.read_bytes(), CASES[case], every))
    check(tmp_path, want[all_layers], all_layers)
    store = EmbeddingStore(tmp_path)
    store.info()  # the survey and a compaction take the forged records too
    store.prune(1 << 30)
    check(tmp_path, want[all_layers], all_layers)


def test_an_undeclared_hidden_size_is_learned_from_the_encoder(
    tmp_path: Path, want: dict[bool, Scores], monkeypatch: pytest.MonkeyPatch
) -> None:
    seg = fill(tmp_path)
    seg.write_bytes(forge(seg.read_bytes(), CASES["wider"], 1))
    hostile = scorer(tmp_path)
    monkeypatch.setattr(hostile.pipeline.vector_source.runtime.encoder, "hidden_size", None)
    for g, w in zip(hostile.score(CANDS, REFS), want[False]):
        np.testing.assert_array_equal(g, w)
    hostile.score(CANDS, REFS)  # all found now: checked against the learned size
    monkeypatch.undo()
    check(tmp_path, want[False])


def make_entry(kind: str, segments: Path, forged: Path) -> None:
    """A non-regular entry named *.seg in ``segments``."""
    if kind == "directory":
        (segments / "a-directory.seg").mkdir()
    elif kind == "fifo":
        os.mkfifo(segments / "b-fifo.seg")
    elif kind == "link":  # reached through the link, it would give one row per text
        (segments / "c-link.seg").symlink_to(forged)
    else:
        os.mkfifo(segments.parent / "fifo")
        (segments / "d-fifo-link.seg").symlink_to(segments.parent / "fifo")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and links: POSIX")
@pytest.mark.parametrize("kind", ["directory", "fifo", "link", "link_to_fifo"])
def test_non_regular_entries_named_seg_are_never_opened(
    tmp_path: Path, want: dict[bool, Scores], kind: str
) -> None:
    store_dir = tmp_path / "store"
    seg = fill(store_dir)
    forged = tmp_path / "forged.seg"
    forged.write_bytes(forge(seg.read_bytes(), CASES["one_row"], 1))
    seg.unlink()
    segments = store_dir / "segments"
    make_entry(kind, segments, forged)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            check(store_dir, want[False])
            store = EmbeddingStore(store_dir)
            info = store.info()
            assert info.segments == 1 and info.damaged == 0  # the one written again
            store.prune(1 << 30)
            store.close()
        except BaseException as e:  # handed to the test's thread
            errors.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # a reader blocked opening the FIFO: let it go, then fail
        for fifo in (segments / "b-fifo.seg", segments.parent / "fifo"):
            if fifo.exists():
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
        pytest.fail("a reader blocked opening a FIFO named *.seg")
    if errors:
        raise errors[0]
    assert len(list(segments.iterdir())) == 2  # the entry is left alone, beside the new one


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_a_read_is_bounded_by_the_bytes_the_file_holds(tmp_path: Path) -> None:
    """A record declaring 7.5 GiB, indexed while a stale listing says the segment is that
    large: reading it asks for no more memory than the file holds (1 GiB of headroom)."""
    script = textwrap.dedent(
        f"""
        import resource, struct, zlib
        from pathlib import Path
        import numpy as np
        from rust_bertscore.store import EmbeddingStore, records, segments

        directory = Path({str(tmp_path)!r})
        key = b"k" * 32
        dims, nbytes = (1 << 15, 1 << 15, 1920), 4 * (1 << 15) * (1 << 15) * 1920
        head = struct.pack("<4sBBH32sd3IQI", records.MAGIC, 1, 3, 0, key, 1.0, *dims,
                           nbytes, 0)
        (directory / "segments").mkdir()
        seg = directory / "segments" / "a.seg"
        seg.write_bytes(records.HEADER.pack(head, zlib.crc32(head)) + bytes(4096))
        real = segments.segment_sizes
        segments.segment_sizes = lambda d: {{n: s + nbytes for n, s in real(d).items()}}
        vm = next(int(line.split()[1]) for line in open("/proc/self/status")
                  if line.startswith("VmSize"))
        limit = vm * 1024 + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        store = EmbeddingStore(directory)
        assert store.get(key) is None
        assert store.get_many([key], [dims]) == [None]
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_sparse_hole_in_a_segment_is_skipped_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment grown by an 8 GiB hole, with whole records after it: the scan jumps over the
    hole (``SEEK_DATA``), so what it reads follows the bytes the segment holds (reading the
    hole through took 37 s), and the records after it are found."""
    from rust_bertscore.store import survey

    store = EmbeddingStore(tmp_path / "store")
    keys = [bytes([i]) * 32 for i in range(3)]
    values = [np.full((2 + i, 4), i + 0.5, dtype=np.float32) for i in range(3)]
    store.put_many(keys, values)
    store.close()
    (segment,) = (tmp_path / "store" / "segments").glob("*.seg")
    data = segment.read_bytes()
    with open(segment, "r+b") as handle:
        handle.truncate(8 << 30)
        handle.seek(8 << 30)
        handle.write(data)  # the same records again, after the hole
    if os.stat(segment).st_blocks * 512 > 1 << 30:
        pytest.skip("this file system stores no holes")
    read = [0]

    def counted(fd: int, n: int, offset: int) -> bytes:
        got = real(fd, n, offset)
        read[0] += len(got)
        return got

    real = survey.read_at
    monkeypatch.setattr(survey, "read_at", counted)
    reopened = EmbeddingStore(tmp_path / "store")
    got = reopened.get_many(keys)
    info = reopened.info()
    reopened.close()
    assert all(np.array_equal(g, v) for g, v in zip(got, values, strict=True))
    assert info.entries == 3
    assert read[0] < 64 << 20, f"{read[0]} bytes read for a segment holding {2 * len(data)}"


def test_a_record_over_a_hole_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sparse segment whose record declares a payload lying over a hole (never written):
    refused before a byte is read or allocated (a 6 GB one was read into memory when a
    compaction copied it)."""
    from rust_bertscore.store import files

    path = tmp_path / "a.seg"
    with open(path, "wb") as handle:
        handle.write(b"\x01" * 8192)
        handle.truncate(1 << 30)
    if os.stat(path).st_blocks * 512 > 1 << 20:
        pytest.skip("this file system stores no holes")
    monkeypatch.setattr(files, "read_at", lambda *a: pytest.fail("read over a hole"))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert files.read_within(fd, 500 << 20, 4096) is None
    finally:
        os.close(fd)
