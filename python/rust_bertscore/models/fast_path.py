"""``precision="fast"``: the fastest CPU path of this host whose scores stay within
:data:`FAST_BOUND` of fp32's, chosen by a short measurement at first use and kept in the cache
per host and model; and the warning for a speed precision on a CPU without its instructions
(docs/cpu_precisions.md).

What decides a path is measured, not assumed: ``int8`` on a CPU without VNNI or AMX ran 0.76x
of fp32 on ONNX Runtime and 0.79x on OpenVINO (AMD EPYC Zen 3, issue 61), so it is neither a
candidate there nor picked by ``runtime="auto"``, and asking for it warns. Where the
instructions exist, each candidate is timed on :data:`FAST_PAIRS` against ONNX Runtime's fp32
and kept only when it is at least :data:`FAST_MARGIN` times as fast with a mean |dF| within
:data:`FAST_BOUND`; the fastest such path wins, fp32 where none qualifies.

The choice is a pure function of the figures (:func:`choose_fast`), so it is tested with fixed
figures; the figures come from :func:`fast_choice`'s ``measure`` (the scorer's, which times
real scorers) and are cached as JSON, verified by content (a digest of the record and the key
it was made for) and written atomically.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import InputValueError, RustBertScoreError
from ..support.atomic import write_text_atomic
from ..support.inputs import read_bytes, read_memo

__all__ = [
    "DECIDING_FLAGS",
    "FAST_BOUND",
    "FAST_MARGIN",
    "FAST_PAIRS",
    "FastChoice",
    "Host",
    "PathFigure",
    "candidate_paths",
    "choose_fast",
    "fast_choice",
    "read_host",
    "slowdown_warning",
]

DECIDING_FLAGS: dict[str, tuple[str, ...]] = {
    "bf16": ("amx_bf16", "avx512_bf16"),
    "int8": ("amx_int8", "avx512_vnni", "avx_vnni"),
}
"""The ``/proc/cpuinfo`` flags that make a precision fast: bf16 GEMMs on AMX tiles or AVX512-BF16's
dot product; int8 GEMMs on AMX or VNNI (AVX-512's or AVX's). Without one of them the precision's
GEMMs are emulated in wider instructions and run slower than fp32's."""

MEASURED_WITHOUT = {
    "int8": "0.76x of fp32 on ONNX Runtime and 0.79x on OpenVINO on an AMD EPYC family 25 "
    "model 1 (Zen 3: AVX2 and FMA, no VNNI)",
    "bf16": "refused by OpenVINO's CPU plugin (no BF16 capability)",
}
"""What a speed precision measured on a CPU without its :data:`DECIDING_FLAGS`
(docs/cpu_precisions.md, issue 61's table)."""

FAST_BOUND = 0.002
"""The largest mean |dF| against fp32, on :data:`FAST_PAIRS`, a path may cost to be chosen."""

FAST_MARGIN = 1.1
"""How much faster than fp32 a path must measure to replace it: below 10 % the difference is
within the noise of a shared host, and fp32 gives bert_score's numbers."""

CHOICE_VERSION = "1"
"""Version of the cached record's layout and of the rule in :func:`choose_fast`."""

FAST_PAIRS: tuple[tuple[str, str], ...] = (
    ("The committee approved the budget on Tuesday.", "On Tuesday the budget was approved."),
    ("A man is playing a guitar on the street.", "Someone plays guitar outside."),
    ("The weather will be cold and rainy tomorrow.", "Tomorrow brings cold rain."),
    ("She finished the report before the deadline.", "The report was done early."),
    ("Prices rose sharply after the announcement.", "The announcement pushed prices up."),
    ("The children were laughing in the garden.", "Kids laughed outside in the garden."),
    ("He could not find his keys this morning.", "This morning his keys were missing."),
    ("The museum opens at nine and closes at five.", "Opening hours are nine to five."),
    ("Researchers published new results on the virus.", "New findings about the virus came out."),
    ("The train was delayed by forty minutes.", "A forty-minute delay hit the train."),
    ("Our team won the final match of the season.", "We took the season's last game."),
    ("Please send me the documents by email.", "Email the files to me, please."),
    ("The river flooded several villages last week.", "Floods hit villages near the river."),
    ("The new phone has a larger screen.", "The screen on the new phone is bigger."),
    ("They are planning a trip to the mountains.", "A mountain trip is being planned."),
    ("The president met with foreign ministers.", "Foreign ministers saw the president."),
    ("I have never seen such a beautiful sunset.", "That sunset was the most beautiful."),
    ("The company will hire two hundred workers.", "Two hundred jobs are coming."),
    ("Traffic was heavy on the highway today.", "The motorway was congested today."),
    ("The book tells the story of a young sailor.", "It is a novel about a young seaman."),
    ("Scientists warn that the ice is melting faster.", "Ice melts quicker, experts say."),
    ("The restaurant serves fresh fish every day.", "Fresh fish is on the menu daily."),
    ("The bridge will be closed for repairs.", "Repairs will shut the bridge."),
    ("Voters head to the polls on Sunday.", "The election takes place Sunday."),
    ("The cat slept on the warm windowsill.", "A cat dozed by the sunny window."),
    ("Exports fell for the third month in a row.", "Exports dropped again this month."),
    ("The orchestra played Beethoven's ninth symphony.", "Beethoven's Ninth was performed."),
    ("The police arrested two suspects overnight.", "Two people were detained by police."),
    ("The school introduced a new lunch program.", "Pupils get a new lunch scheme."),
    ("Heavy snow closed the airport for a day.", "Snow shut the airport for a day."),
    ("The film won three awards at the festival.", "Three prizes went to the film."),
    ("The patient recovered quickly after surgery.", "Recovery after the operation was fast."),
)
"""The built-in pairs a path is timed and compared on: 32 short news-like sentences and
paraphrases (written for this package)."""


@dataclass(frozen=True)
class Host:
    """The CPU a choice was measured on.

    Examples
    --------
    >>> from rust_bertscore.models.fast_path import Host
    >>> zen3 = Host("AMD EPYC 7B13", frozenset({"avx2", "fma"}), 2)
    >>> zen3.has("int8"), zen3.missing("int8")
    (False, ('amx_int8', 'avx512_vnni', 'avx_vnni'))
    """

    model: str
    flags: frozenset[str]
    cpus: int

    def has(self, precision: str) -> bool:
        """Whether one of the precision's :data:`DECIDING_FLAGS` is here (True for others)."""
        wanted = DECIDING_FLAGS.get(precision)
        return wanted is None or any(f in self.flags for f in wanted)

    def missing(self, precision: str) -> tuple[str, ...]:
        """The precision's deciding flags this CPU lacks."""
        return tuple(f for f in DECIDING_FLAGS.get(precision, ()) if f not in self.flags)

    def key(self) -> str:
        """The model name, the deciding flags present and the CPU count: what the cache is
        kept per (a host with other instructions or cores measures again)."""
        deciding = sorted({f for fs in DECIDING_FLAGS.values() for f in fs} & self.flags)
        return f"{self.model}|{','.join(deciding)}|{self.cpus}"


def parse_cpuinfo(text: str, cpus: int) -> Host:
    """The :class:`Host` of a ``/proc/cpuinfo`` text (the first processor's model name and
    flags).

    >>> from rust_bertscore.models.fast_path import parse_cpuinfo
    >>> host = parse_cpuinfo("model name\\t: Xeon\\nflags\\t\\t: avx2 avx512_vnni\\n", 2)
    >>> host.model, host.has("int8"), host.has("bf16")
    ('Xeon', True, False)
    """
    model, flags = "unknown CPU", frozenset[str]()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and model == "unknown CPU":
            model = value.strip()[:200]
        elif name == "flags" and not flags:
            flags = frozenset(value.split())
    return Host(model, flags, cpus)


@functools.lru_cache(maxsize=1)
def read_host() -> Host:
    """This machine's :class:`Host`, from ``/proc/cpuinfo`` (no flags where it cannot be read:
    every speed precision then counts as missing its instructions). Read once per process."""
    text = ""
    with contextlib.suppress(OSError, RustBertScoreError, UnicodeDecodeError):
        text = read_bytes("/proc/cpuinfo", max_bytes=1 << 20, error=RustBertScoreError).decode()
    return parse_cpuinfo(text, os.cpu_count() or 1)


def slowdown_warning(precision: str, host: Host) -> str | None:
    """The warning for ``precision`` on ``host`` when the CPU lacks its instructions, naming
    the flags and what was measured without them; None when it has them (or for fp32).

    >>> from rust_bertscore.models.fast_path import Host, slowdown_warning
    >>> print(slowdown_warning("int8", Host("EPYC", frozenset({"avx2"}), 2)))  # doctest: +ELLIPSIS
    precision='int8' on this CPU (EPYC) is likely slower than fp32: it has none of amx_int8, ...
    >>> slowdown_warning("int8", Host("Xeon", frozenset({"avx512_vnni"}), 2)) is None
    True
    """
    if precision not in DECIDING_FLAGS or host.has(precision):
        return None
    return (
        f"precision={precision!r} on this CPU ({host.model}) is likely slower than fp32: it has "
        f"none of {', '.join(host.missing(precision))}, without which {precision} measured "
        f"{MEASURED_WITHOUT[precision]}. precision='fast' measures the paths of this host and "
        "keeps fp32 where nothing is faster (docs/cpu_precisions.md)"
    )


@dataclass(frozen=True)
class PathFigure:
    """One measured path: pairs/s on :data:`FAST_PAIRS` and mean |dF| against fp32."""

    runtime: str
    precision: str
    pairs_per_s: float
    mean_dF: float

    @property
    def name(self) -> str:
        """``runtime/precision``, e.g. ``openvino/int8``."""
        return f"{self.runtime}/{self.precision}"


@dataclass(frozen=True)
class FastChoice:
    """What ``precision="fast"`` runs on this host for this model, and why.

    Attributes
    ----------
    runtime, precision : str
        The chosen path.
    figures : tuple of PathFigure
        Every path measured, ONNX Runtime's fp32 first.
    host : str
        :meth:`Host.key` of the machine measured.
    reason : str
        One sentence: why this path.
    """

    runtime: str
    precision: str
    figures: tuple[PathFigure, ...]
    host: str
    reason: str

    def explain(self) -> list[str]:
        """One line per path (its ratio to fp32 and mean |dF|), then the choice.

        >>> from rust_bertscore.models.fast_path import PathFigure, choose_fast
        >>> figures = [PathFigure("onnxruntime", "fp32", 100.0, 0.0),
        ...            PathFigure("openvino", "bf16", 250.0, 3e-4)]
        >>> print("\\n".join(choose_fast(figures, host="Xeon").explain()))
        onnxruntime/fp32: 1.00x fp32, mean |dF| 0.0e+00
        openvino/bf16: 2.50x fp32, mean |dF| 3.0e-04
        chosen: openvino/bf16 (the fastest path within mean |dF| 0.002 and at least 1.1x fp32)
        """
        base = self.figures[0].pairs_per_s if self.figures else 0.0
        lines = [
            f"{f.name}: {f.pairs_per_s / base if base else float('nan'):.2f}x fp32, mean |dF| "
            f"{f.mean_dF:.1e}"
            for f in self.figures
        ]
        return [*lines, f"chosen: {self.runtime}/{self.precision} ({self.reason})"]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the cached record's body)."""
        return {**asdict(self), "figures": [asdict(f) for f in self.figures]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FastChoice:
        """The choice of :meth:`to_dict`'s data; KeyError/TypeError/ValueError when malformed."""
        figures = tuple(
            PathFigure(
                str(f["runtime"]), str(f["precision"]), float(f["pairs_per_s"]), float(f["mean_dF"])
            )
            for f in data["figures"]
        )
        return cls(
            str(data["runtime"]), str(data["precision"]), figures, str(data["host"]),
            str(data["reason"]),
        )  # fmt: skip


def candidate_paths(
    host: Host, openvino_capabilities: Sequence[str] | None
) -> list[tuple[str, str]]:
    """The (runtime, precision) paths worth timing here: ONNX Runtime's fp32 always; int8 (ONNX
    Runtime's, and OpenVINO's where its plugin reports ``INT8``) only with VNNI or AMX; bf16
    (OpenVINO) only where the plugin reports ``BF16``. ``openvino_capabilities``: the CPU
    plugin's ``OPTIMIZATION_CAPABILITIES``, None without OpenVINO (and NNCF).

    >>> from rust_bertscore.models.fast_path import Host, candidate_paths
    >>> candidate_paths(Host("EPYC", frozenset({"avx2"}), 2), None)
    [('onnxruntime', 'fp32')]
    >>> amx = Host("Xeon", frozenset({"amx_int8", "amx_bf16"}), 2)
    >>> candidate_paths(amx, ["FP32", "INT8", "BF16"])  # doctest: +NORMALIZE_WHITESPACE
    [('onnxruntime', 'fp32'), ('onnxruntime', 'int8'), ('openvino', 'int8'),
     ('openvino', 'bf16')]
    """
    paths = [("onnxruntime", "fp32")]
    caps = set(openvino_capabilities or ())
    if host.has("int8"):
        paths.append(("onnxruntime", "int8"))
        if "INT8" in caps:
            paths.append(("openvino", "int8"))
    if "BF16" in caps and host.has("bf16"):
        paths.append(("openvino", "bf16"))
    return paths


def choose_fast(
    figures: Sequence[PathFigure],
    *,
    bound: float = FAST_BOUND,
    margin: float = FAST_MARGIN,
    host: str = "",
) -> FastChoice:
    """The fastest path within ``bound`` (mean |dF|) that measured at least ``margin`` times
    ONNX Runtime's fp32 (the first figure); fp32 where none did.

    Examples
    --------
    >>> from rust_bertscore.models.fast_path import PathFigure, choose_fast
    >>> fp32 = PathFigure("onnxruntime", "fp32", 100.0, 0.0)
    >>> slow_int8 = PathFigure("onnxruntime", "int8", 76.0, 0.002)
    >>> far_int8 = PathFigure("openvino", "int8", 300.0, 0.004)
    >>> c = choose_fast([fp32, slow_int8, far_int8])
    >>> c.precision, c.reason
    ('fp32', 'no path measured at least 1.1x fp32 within mean |dF| 0.002')
    """
    if not figures or (figures[0].runtime, figures[0].precision) != ("onnxruntime", "fp32"):
        raise InputValueError("choose_fast needs ONNX Runtime's fp32 figure first")
    base = figures[0]
    qualified = [
        f for f in figures[1:] if f.mean_dF <= bound and f.pairs_per_s >= margin * base.pairs_per_s
    ]
    if not qualified:
        reason = f"no path measured at least {margin:g}x fp32 within mean |dF| {bound:g}"
        return FastChoice(base.runtime, base.precision, tuple(figures), host, reason)
    best = max(qualified, key=lambda f: f.pairs_per_s)
    reason = f"the fastest path within mean |dF| {bound:g} and at least {margin:g}x fp32"
    return FastChoice(best.runtime, best.precision, tuple(figures), host, reason)


def _digest(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def fast_choice(
    key: Mapping[str, str],
    candidates: Sequence[tuple[str, str]],
    measure: Callable[[Sequence[tuple[str, str]]], list[PathFigure]],
    cache_dir: Path | None,
) -> FastChoice:
    """The cached choice for ``key`` (host, model, versions), else ``measure(candidates)``'s
    figures through :func:`choose_fast`, cached. A record is used only when it parses, names
    this very key and its digest matches its content; anything else is measured again and
    replaced (atomically). ``cache_dir`` None (a read-only or absent cache) measures every time.
    """
    body_key = {"version": CHOICE_VERSION, **{k: str(v) for k, v in key.items()}}
    name = _digest(body_key)[:32]
    path = cache_dir / f"{name}.json" if cache_dir is not None else None
    if path is not None:
        saved = read_memo(path)
        if saved is not None and saved.get("key") == body_key:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                choice = FastChoice.from_dict(saved["choice"])
                if saved.get("digest") == _digest({"key": body_key, "choice": choice.to_dict()}):
                    return choice
    choice = choose_fast(measure(candidates), host=body_key.get("host", ""))
    if path is not None:
        record: dict[str, Any] = {"key": body_key, "choice": choice.to_dict()}
        record["digest"] = _digest(record)
        with contextlib.suppress(OSError):  # a read-only cache only costs a measurement
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps(record, indent=1))
    return choice
