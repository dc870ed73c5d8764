"""What every input of ``rust-bertscore score`` gives the command: the :class:`Source` interface
(counts, chunks of candidates and references, where a text comes from, empty-text warnings), the
:class:`Chunk` it yields, and the grouping of rows into chunks that the input kinds of
:mod:`.inputs` share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

Refs = list[str] | list[list[str]]


@dataclass(frozen=True)
class Chunk:
    """Consecutive candidates and their references, in the shape ``score()`` takes, and the
    input line of each candidate (None where the input has no lines).

    Examples
    --------
    >>> from rust_bertscore.cli.chunks import Chunk
    >>> chunk = Chunk(["a", "", "c"], ["x", "", "z"], errors=[None, "f:2: bad", None])
    >>> good = chunk.good()
    >>> good.cands, good.refs, good.errors
    (['a', 'c'], ['x', 'z'], [])
    """

    cands: list[str]
    refs: Refs
    lines: list[int] | None = None
    errors: list[str | None] = field(default_factory=list)
    """With ``--on-error null``: each candidate's problem (``FILE:LINE: ...``), None when it is
    good; a bad line's texts are placeholders (empty). Empty when every line is good."""

    def good(self) -> Chunk:
        """The chunk without its bad lines (errors dropped)."""
        if not any(e is not None for e in self.errors):
            return Chunk(self.cands, self.refs, lines=self.lines)
        keep = [i for i, e in enumerate(self.errors) if e is None]
        lines = None if self.lines is None else [self.lines[i] for i in keep]
        return Chunk(
            [self.cands[i] for i in keep],
            [self.refs[i] for i in keep],  # type: ignore[arg-type]
            lines=lines,
        )


class Source:
    """Where candidates and references come from.

    Attributes
    ----------
    num_cands : int
        Number of candidates.
    num_refs : int
        Number of reference sentences, all references of all candidates counted (the ``M`` of
        IDF's ``ln((M+1)/(df+1))``).
    description : str
        For messages.
    """

    num_cands: int
    num_refs: int
    description: str
    idf_allowed: bool = True
    group_size: int | None = None
    """References per candidate when every candidate has the same number (None: not known)."""
    on_error: str = "raise"
    """``"null"``: a bad line becomes a chunk row with an error instead of a ``CliError``."""

    warn: Callable[[str], None] | None = None
    """Set by the command line: called with one message per empty text (naming its line)."""
    _reported: set[tuple[int, int]]

    def chunks(self, size: int) -> Iterator[Chunk]:
        """Candidates and references, ``size`` candidates at a time."""
        raise NotImplementedError

    def where(self, line: int | None, ref: int | None) -> str:
        """Where a text comes from, for messages (``ref``: None for the candidate, else the
        position of the reference)."""
        return "candidate text" if ref is None else "reference text"

    def report_empty(self, chunk: Chunk) -> None:
        """Call :attr:`warn` once for each empty (or all-whitespace) text of ``chunk``."""
        if self.warn is None:
            return
        reported = self.__dict__.setdefault("_reported", set())
        for k, (cand, ref) in enumerate(zip(chunk.cands, chunk.refs)):
            line = None if chunk.lines is None else chunk.lines[k]
            group = [ref] if isinstance(ref, str) else list(ref)
            texts = [(cand, None), *((r, j) for j, r in enumerate(group))]
            for text, j in texts:
                key = (line if line is not None else k, -1 if j is None else j)
                if not text.strip() and key not in reported:
                    reported.add(key)
                    role = "candidate" if j is None else "reference"
                    self.warn(
                        f"{self.where(line, j)}: empty {role}: its P, R and F1 are 0 (as "
                        "bert_score)"
                    )

    def ref_chunks(self, size: int) -> Iterator[list[str]]:
        """Every reference sentence (flattened), up to ``size`` at a time."""
        raise NotImplementedError


def chunked(
    pairs: Iterable[tuple[str, object]], size: int, first_line: int | None = None
) -> Iterator[Chunk]:
    """Group (candidate, reference or reference list) pairs into chunks of ``size`` pairs.

    Parameters
    ----------
    pairs : iterable of (str, object)
        Each candidate with its reference (a str) or its references (a list of str).
    size : int
        Pairs per chunk (the last chunk may hold fewer).
    first_line : int or None
        When given, the chunks number their pairs as lines from it; else they have no lines.

    Yields
    ------
    Chunk
        The next ``size`` pairs.

    Examples
    --------
    >>> from rust_bertscore.cli.chunks import chunked
    >>> [(c.cands, c.lines) for c in chunked([("a", "x"), ("b", "y"), ("c", "z")], 2, 1)]
    [(['a', 'b'], [1, 2]), (['c'], [3])]
    """
    cands: list[str] = []
    refs: list = []
    start = first_line

    def chunk() -> Chunk:
        lines = None if start is None else list(range(start, start + len(cands)))
        return Chunk(cands, refs, lines=lines)

    for cand, ref in pairs:
        cands.append(cand)
        refs.append(ref)
        if len(cands) == size:
            yield chunk()
            start = None if start is None else start + len(cands)
            cands, refs = [], []
    if cands:
        yield chunk()


def chunked_with_errors(
    rows: Iterable[tuple[str, object, str | None]], size: int
) -> Iterator[Chunk]:
    """:func:`chunked` for (candidate, reference(s), problem) rows: chunks with ``errors``.

    Parameters
    ----------
    rows : iterable of (str, object, str or None)
        Each candidate, its reference(s), and its problem (None: a good row).
    size : int
        Rows per chunk (the last chunk may hold fewer).

    Yields
    ------
    Chunk
        The next ``size`` rows, their problems in :attr:`Chunk.errors` (no lines).

    Examples
    --------
    >>> from rust_bertscore.cli.chunks import chunked_with_errors
    >>> rows = [("a", "x", None), ("", "", "f:2: not UTF-8")]
    >>> [c.errors for c in chunked_with_errors(rows, 5)]
    [[None, 'f:2: not UTF-8']]
    """
    cands: list[str] = []
    refs: list = []
    errors: list[str | None] = []
    for cand, ref, problem in rows:
        cands.append(cand)
        refs.append(ref)
        errors.append(problem)
        if len(cands) == size:
            yield Chunk(cands, refs, errors=errors)
            cands, refs, errors = [], [], []
    if cands:
        yield Chunk(cands, refs, errors=errors)


def good_ref_chunks(source: Source, size: int) -> Iterator[list[str]]:
    """The references of ``source``'s good lines (for IDF), about ``size`` at a time.

    Parameters
    ----------
    source : Source
        Any input; its bad lines (``--on-error null``) are left out.
    size : int
        Candidates read per chunk (each gives one or more references).

    Yields
    ------
    list of str
        The references of the next chunk's good lines, flattened.

    Examples
    --------
    >>> from rust_bertscore.cli.chunks import Chunk, Source, good_ref_chunks
    >>> class Two(Source):
    ...     def chunks(self, size):
    ...         yield Chunk(["a", ""], [["x", "y"], [""]], errors=[None, "f:2: bad"])
    >>> list(good_ref_chunks(Two(), 10))
    [['x', 'y']]
    """
    for chunk in source.chunks(size):
        good = chunk.good()
        yield [r for g in good.refs for r in ([g] if isinstance(g, str) else g)]
