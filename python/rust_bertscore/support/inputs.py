"""Reading files that come from outside (a model's JSON files, baselines, caches) with bounds:
a size cap checked before anything is read, UTF-8 checked with the byte offset of a bad byte,
JSON parsed with a nesting-depth cap, and every failure one ``RustBertScoreError`` subclass (the
caller's) naming the file, and the line, column, offset or key where it went wrong: never
``UnicodeDecodeError``, ``json.JSONDecodeError``, ``RecursionError`` or a bare ``OSError``.

``docs/inputs.md`` lists every input with its limit and its error.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..errors import RustBertScoreError
from .boundary import check_regular, read_regular

MiB = 1 << 20

MAX_CONFIG_BYTES = 16 * MiB
"""``config.json``, ``tokenizer_config.json``, ``special_tokens_map.json``, ``added_tokens.json``,
an index of shards, an export sidecar, cache manifests: small files (the largest configs seen
carry label tables of a few hundred KB)."""

MAX_TOKENIZER_BYTES = 512 * MiB
"""``tokenizer.json``, ``vocab.json``, ``vocab.txt``, ``merges.txt`` (Gemma 3's tokenizer.json
is 33 MB; a 256k vocabulary with merges stays under 100 MB)."""

MAX_JSON_DEPTH = 64
"""Nesting depth of any JSON file read (tokenizer.json nests about 6 deep)."""

MAX_GRAPH_BYTES = 2048 * MiB
"""An ``.onnx`` file handed to ONNX Runtime: protobuf's own limit on one message (larger graphs
keep their weights in external data files beside it)."""

MAX_TEXT_BYTES = 64 * MiB
"""A baseline CSV and other small text tables."""


def _fail(error: type[RustBertScoreError], path: Path, what: str) -> RustBertScoreError:
    return error(f"{path}: {what}")


def check_file(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> int:
    """The size of the regular file ``path`` (for a library that reads it itself), or ``error``
    when it is over ``max_bytes``, not a regular file (a FIFO is opened without blocking and
    refused, never waited on), or cannot be opened; a missing file raises
    ``FileNotFoundError`` (``support.boundary.check_regular``).

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         check_file(tmp, max_bytes=10, error=InputValueError)
    ...     except InputValueError as e:
    ...         print(str(e).endswith("a directory, expected a regular file"))
    True
    """
    return check_regular(path, max_bytes=max_bytes, error=error)


def read_bytes(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> bytes:
    """The bytes of the regular file ``path``, refused (``error``) past ``max_bytes`` before any
    is read, or when it is not a regular file (a FIFO is refused at once) or cannot be read. A
    missing file raises ``FileNotFoundError`` (callers decide what a missing file means);
    ``support.boundary.read_regular``.

    Examples
    --------
    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "f.txt"); _ = p.write_bytes(b"12345")
    ...     read_bytes(p, max_bytes=5, error=InputValueError)
    ...     try:
    ...         read_bytes(p, max_bytes=4, error=InputValueError)
    ...     except InputValueError as e:
    ...         print(str(e).endswith("5 bytes, over the limit of 4 bytes"))
    b'12345'
    True
    """
    return read_regular(path, max_bytes=max_bytes, error=error)


def decode_utf8(data: bytes, path: str | os.PathLike[str], error: type[RustBertScoreError]) -> str:
    """``data`` as UTF-8 (a leading byte-order mark dropped), or ``error`` naming the offset
    of the first bad byte.

    >>> from rust_bertscore.errors import InputValueError
    >>> decode_utf8(b"ok", "f", InputValueError)
    'ok'
    >>> try:
    ...     decode_utf8(b"ab\\xff", "f", InputValueError)
    ... except InputValueError as e:
    ...     print(e)
    f: not UTF-8 text (byte 0xff at offset 2)
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise _fail(
            error, Path(path), f"not UTF-8 text (byte 0x{bad} at offset {exc.start})"
        ) from None


def read_text(
    path: str | os.PathLike[str], *, max_bytes: int, error: type[RustBertScoreError]
) -> str:
    """:func:`read_bytes` then :func:`decode_utf8`.

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "t.csv"); _ = p.write_bytes("café".encode())
    ...     read_text(p, max_bytes=100, error=InputValueError)
    'café'
    """
    return decode_utf8(read_bytes(path, max_bytes=max_bytes, error=error), path, error)


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative: no recursion).

    >>> json_depth_over({"a": [[1]]}, 3), json_depth_over({"a": [[1]]}, 2)
    (False, True)
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def parse_json(
    text: str | bytes,
    path: str | os.PathLike[str],
    *,
    error: type[RustBertScoreError],
    max_depth: int = MAX_JSON_DEPTH,
    unique_keys: bool = False,
) -> Any:
    """Parse JSON read from ``path``; ``error`` names the line and column of a syntax error, and
    refuses nesting deeper than ``max_depth`` and integers too long to convert; with
    ``unique_keys``, also an object that names a key twice (where Python's parser keeps the last
    silently: a safetensors header that names a tensor twice).

    >>> from rust_bertscore.errors import InputValueError
    >>> parse_json('{"a": 1}', "c.json", error=InputValueError)
    {'a': 1}
    >>> try:
    ...     parse_json('{"a": }', "c.json", error=InputValueError)
    ... except InputValueError as e:
    ...     print(e)
    c.json: not valid JSON at line 1, column 7 (Expecting value)
    """
    if isinstance(text, bytes):
        text = decode_utf8(text, path, error)
    try:
        value = json.loads(text, object_pairs_hook=_unique_object if unique_keys else None)
    except _DuplicateKey as exc:
        raise _fail(error, Path(path), f"the key {exc.key!r} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        raise _fail(
            error,
            Path(path),
            f"not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg})",
        ) from None
    except RecursionError:
        raise _fail(error, Path(path), f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise _fail(error, Path(path), f"not valid JSON ({exc})") from None
    if json_depth_over(value, max_depth):
        raise _fail(error, Path(path), f"JSON nested deeper than {max_depth} levels")
    if _SURROGATE_ESCAPE.search(text):  # an escaped surrogate left unpaired is no character
        where = _lone_surrogate(value)
        if where is not None:
            raise _fail(error, Path(path), f"a lone UTF-16 surrogate (\\u escape) in {where}")
    return value


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """Where ``value`` holds a string that is not valid Unicode (``"key 'k'"``, ``"item 3"``),
    or None."""

    def bad(text: str) -> bool:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False

    stack: list[tuple[Any, str]] = [(value, "the top value")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str) and bad(item):
            return where
        if isinstance(item, dict):
            for key, sub in item.items():
                if bad(key):
                    return f"a key near {key.encode('utf-8', 'replace')[:40]!r}"
                stack.append((sub, f"key {key[:40]!r}"))
        elif isinstance(item, list):
            stack.extend((sub, f"item {i} of {where}") for i, sub in enumerate(item))
    return None


def read_json(
    path: str | os.PathLike[str],
    *,
    error: type[RustBertScoreError],
    max_bytes: int = MAX_CONFIG_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """Read and parse the JSON file ``path`` within ``max_bytes`` and ``max_depth``; every
    failure but a missing file is ``error``.

    Examples
    --------
    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "deep.json"); _ = p.write_text("[" * 100 + "]" * 100)
    ...     try:
    ...         read_json(p, error=InputValueError)
    ...     except InputValueError as e:
    ...         print(str(e).endswith("JSON nested deeper than 64 levels"))
    True
    """
    return parse_json(
        read_bytes(path, max_bytes=max_bytes, error=error), path, error=error, max_depth=max_depth
    )


def read_json_object(
    path: str | os.PathLike[str],
    *,
    error: type[RustBertScoreError],
    max_bytes: int = MAX_CONFIG_BYTES,
) -> dict[str, Any]:
    """:func:`read_json` of a file that must hold a JSON object.

    >>> import tempfile
    >>> from rust_bertscore.errors import InputValueError
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp, "c.json"); _ = p.write_text("[1]")
    ...     try:
    ...         read_json_object(p, error=InputValueError)
    ...     except InputValueError as e:
    ...         print(str(e).endswith("expected a JSON object, got list"))
    True
    """
    value = read_json(path, error=error, max_bytes=max_bytes)
    if not isinstance(value, dict):
        raise _fail(error, Path(path), f"expected a JSON object, got {type(value).__name__}")
    return value


MAX_MEMO_BYTES = 1 * MiB
"""A file the package wrote in its own caches (a memo, a manifest, ``store.json``)."""


def read_memo(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """A JSON object the package wrote in one of its caches, or None when it is missing,
    damaged or was replaced by something else (over :data:`MAX_MEMO_BYTES`, not UTF-8, not
    JSON, nested too deep, not an object, not a regular file): the caller then rebuilds what
    it memoised, as for a miss.

    >>> read_memo("/nonexistent/memo.json") is None
    True
    """
    try:
        value = read_json(path, error=RustBertScoreError, max_bytes=MAX_MEMO_BYTES)
    except (OSError, RustBertScoreError):
        return None
    return value if isinstance(value, dict) else None
