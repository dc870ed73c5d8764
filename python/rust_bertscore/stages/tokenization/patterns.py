"""Oniguruma patterns checked for bounded matching cost, before any text meets them.

``tokenizer.json`` may carry Oniguruma patterns (a ``Split`` pre-tokenizer, a ``Replace``
normaliser) that the ``tokenizers`` library runs on every text with a backtracking matcher. A
small file can make that cost grow without bound: ``(a+)+$`` is exponential in the length of a
run of ``a`` (each match attempt stops only at Oniguruma's retry limit, ~0.25 s), and
``\\s*\\s*\\S`` is cubic (110 s on 4,000 spaces). The matcher cannot be interrupted from Python,
so a pattern is accepted only when it is built from constructs whose cost is bounded:

- no back-references, subexpression calls, conditionals, absent operators, callouts,
  comments, control or meta escapes, or extended mode (``\\1``, ``\\k<n>``, ``\\g<n>``,
  ``(?(1)..)``, ``(?~..)``, ``(?{..})``, ``(?#..)``, ``\\cX``, ``(?x)``): constructs whose
  reading could differ between this parser and Oniguruma's are refused, not guessed;
- a group repeated more than once holds no quantifier and no alternation (``(a+)+``,
  ``(a|a)*`` are refused; ``(?:ab)+`` and ``(?i:'s|'t)?`` are not); groups nest at most
  :data:`MAX_NESTING` deep; POSIX brackets are the named ones;
- counted repetitions ``{n,m}`` (ASCII digits) stay within :data:`MAX_COUNT`;
- after two repetitions (``*``, ``+``, ``{n,}``, ``{n,m}`` with ``m`` over 1) on one path
  through the pattern, nothing follows that can fail (an item that must match, an anchor, a
  look-around, which runs again at every split of the text between the two).

Then each match attempt costs at most linear time in the text, and a whole text at most
quadratic time in its longest run of one character class (``\\s*\\S`` on 16,000 spaces: 1.2 s);
every published pattern (GPT-2, Llama 3, Qwen2, o200k, SentencePiece's ``" {2,}"``) passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

MAX_COUNT = 1000
"""The largest bound of a counted repetition ``{n,m}``."""

UNBOUNDED = -1


@dataclass
class Item:
    """One step of a sequence: an atom, an anchor or a group, with its repetition."""

    kind: str  # "atom", "anchor", "group", "look"
    low: int = 1
    high: int = 1  # UNBOUNDED for * + {n,}
    branches: list[list[Item]] = field(default_factory=list)

    def can_fail(self) -> bool:
        return self.kind in ("anchor", "look") or self.low >= 1

    def repeats(self) -> bool:
        """Whether it may match more than once: ``*``, ``+``, ``{n,}``, and ``{n,m}`` with ``m``
        over 1 (``\\s{0,1000}\\s{0,1000}\\S`` costs as ``\\s*\\s*\\S`` up to 1,000)."""
        return self.high == UNBOUNDED or self.high > 1


class PatternError(ValueError):
    """A construct outside the accepted set, with its offset in the pattern."""


_REFUSED_GROUPS = {
    "(": "a conditional",
    "~": "an absent operator",
    "{": "a callout",
    "#": "a comment",  # Oniguruma skips escapes inside one: a place to hide a pattern
}
MAX_NESTING = 64
"""The deepest nesting of groups accepted."""
POSIX_CLASSES = frozenset(
    [
        "alnum",
        "alpha",
        "ascii",
        "blank",
        "cntrl",
        "digit",
        "graph",
        "lower",
        "print",
        "punct",
        "space",
        "upper",
        "word",
        "xdigit",
    ]
)


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.depth = 0

    def fail(self, what: str) -> PatternError:
        return PatternError(f"{what} at offset {self.i}")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def at(self, chars: str, k: int = 0) -> bool:
        """Whether the character ``k`` past the cursor is one of ``chars`` (not the end)."""
        c = self.peek(k)
        return c != "" and c in chars

    def parse(self) -> list[list[Item]]:
        branches = self.alternatives()
        if self.i != len(self.p):
            raise self.fail("an unmatched ')'")
        return branches

    def alternatives(self) -> list[list[Item]]:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches

    def sequence(self) -> list[Item]:
        items: list[Item] = []
        while self.i < len(self.p) and not self.at("|)"):
            item = self.atom()
            if item is None:
                continue
            self.quantifier(item)
            items.append(item)
        return items

    def atom(self) -> Item | None:
        c = self.peek()
        if c == "(":
            return self.group()
        if c == "[":
            self.char_class()
            return Item("atom")
        if c == "\\":
            return self.escape()
        if c in "*+?":
            raise self.fail(f"a quantifier {c!r} with nothing to repeat")
        self.i += 1
        return Item("anchor" if c in "^$" else "atom")

    def escape(self) -> Item:
        self.i += 1
        c = self.peek()
        if not c:
            raise self.fail("a trailing backslash")
        if c in "123456789" or c in "kg":
            raise self.fail("a back-reference or subexpression call")
        if c in "cCM":  # \cX, \C-X, \M-X take the next character whatever it is
            raise self.fail(f"a control or meta escape \\{c}")
        if c.isascii() and c.isalpha() and c not in ZERO_WIDTH_ESCAPES + CHARACTER_ESCAPES:
            raise self.fail(f"an escape \\{c} this check does not know")
        self.i += 1
        if c in "pPxo" and self.at("{"):
            self.skip_to("}")
        elif c in "ux":  # \uHHHH, \xHH
            for _ in range(4 if c == "u" else 2):
                if self.at(HEX):
                    self.i += 1
        return Item("anchor" if c in ZERO_WIDTH_ESCAPES else "atom")

    def skip_to(self, end: str) -> None:
        j = self.p.find(end, self.i)
        if j < 0:
            raise self.fail(f"an unterminated {end!r}")
        self.i = j + 1

    def char_class(self) -> None:
        self.i += 1  # "["
        depth = 1
        if self.peek() == "^":
            self.i += 1
        if self.peek() == "]":  # a literal "]" first
            self.i += 1
        while depth:
            c = self.peek()
            if not c:
                raise self.fail("an unterminated character class")
            if c == "\\":
                self.i += 2
                if self.p[self.i - 1 : self.i] in ("p", "P", "x", "o") and self.peek() == "{":
                    self.skip_to("}")
                continue
            if c == "[" and self.peek(1) == ":":
                end = self.p.find(":]", self.i)
                name = self.p[self.i + 2 : end].lstrip("^") if end > 0 else ""
                if name not in POSIX_CLASSES:
                    raise self.fail("an unclear POSIX bracket")
                self.i = end + 2
                continue
            depth += c == "["
            depth -= c == "]"
            self.i += 1

    def group(self) -> Item | None:
        self.i += 1  # "("
        kind, behind = "group", False
        if self.peek() == "?":
            self.i += 1
            c = self.peek()
            if c in _REFUSED_GROUPS:
                raise self.fail(_REFUSED_GROUPS[c])
            if self.at("=!") or (c == "<" and self.at("=!", 1)):
                kind = "look"
                behind = c == "<"
                self.i += 1 if c in "=!" else 2
            elif c in (":", ">"):
                self.i += 1
            elif self.at("<'P"):  # a named group: (?<name>..), (?'name'..), (?P<name>..)
                self.i += 1
                self.skip_to("'" if c == "'" else ">")
            else:  # options: (?imx-imx) or (?imx-imx:...)
                start = self.i
                while self.at("imxWDSPya-"):
                    self.i += 1
                if "x" in self.p[start : self.i]:
                    raise self.fail("extended mode (?x)")
                if self.peek() == ")":
                    self.i += 1
                    return None
                if self.peek() != ":":
                    raise self.fail("an unknown group")
                self.i += 1
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"groups nested over {MAX_NESTING} deep")
        branches = self.alternatives()
        self.depth -= 1
        if kind == "look" and behind and any(sub.repeats() for sub in walk(branches)):
            # Oniguruma matches a look-behind of variable length backwards from every split:
            # \t*(?<=x\t*) was cubic
            raise self.fail("a look-behind holding a repetition")
        if self.peek() != ")":
            raise self.fail("an unterminated group")
        self.i += 1
        return Item(kind, branches=branches)

    def quantifier(self, item: Item) -> None:
        c = self.peek()
        if self.at("*+?"):
            self.i += 1
            item.low, item.high = {"*": (0, UNBOUNDED), "+": (1, UNBOUNDED), "?": (0, 1)}[c]
        elif c == "{" and (bounds := self.interval()) is not None:
            item.low, item.high = bounds
        else:
            return
        if self.at("?+"):  # lazy or possessive
            self.i += 1
        if self.at("*+?{") and self.interval_or_quantifier():
            raise self.fail("a repeated quantifier")
        if item.kind in ("anchor", "look"):
            item.kind = "anchor"
        if item.kind == "group" and (item.high == UNBOUNDED or item.high > 1):
            if len(item.branches) > 1:
                raise self.fail("a repeated group with alternatives")
            if any(sub.high != 1 or sub.low != 1 or sub.branches for sub in walk(item.branches)):
                raise self.fail("a repeated group holding a quantifier or group")

    def interval_or_quantifier(self) -> bool:
        if self.peek() != "{":
            return True
        saved = self.i
        found = self.interval() is not None
        self.i = saved
        return found

    def interval(self) -> tuple[int, int] | None:
        """``{n}``, ``{n,}``, ``{,m}``, ``{n,m}`` at the cursor (moved past it), or None when the
        brace is a literal (Oniguruma's Ruby syntax)."""
        end = self.p.find("}", self.i)
        if end < 0:
            return None
        body = self.p[self.i + 1 : end]
        low, comma, high = body.partition(",")
        if not (_digits(low) or (comma and not low)) or not (_digits(high) or not high):
            return None
        if not low and not high:
            return None
        lo = int(low) if low else 0
        hi = int(high) if high else (UNBOUNDED if comma else lo)
        if max(lo, hi) > MAX_COUNT:
            raise self.fail(f"a counted repetition over {MAX_COUNT}")
        self.i = end + 1
        return lo, hi


HEX = "0123456789abcdefABCDEF"
ZERO_WIDTH_ESCAPES = "AzZbBGyYK"
"""Escapes that match no character (anchors, text-segment boundaries ``\\y``, ``\\K``)."""
CHARACTER_ESCAPES = "dDwWsShHnrtfvaeXRNOxuopP0"
"""Escapes that match characters (classes, a grapheme cluster ``\\X``, a line break ``\\R``,
code points); any other letter after a backslash is refused, not guessed."""


def _digits(text: str) -> bool:
    """ASCII digits only (``"²".isdigit()`` is true, and Oniguruma reads ``{²}`` as text)."""
    return text.isascii() and text.isdigit()


def walk(branches: list[list[Item]]) -> Iterator[Item]:
    for branch in branches:
        for item in branch:
            yield item
            yield from walk(item.branches)


def _paths(branch: list[Item], seen: int) -> int:
    """The most unbounded repetitions on one path through ``branch``, ``seen`` before it;
    PatternError when an item that can fail follows two of them on a path (then every split
    of the text between those two is tried before the attempt fails)."""
    for item in branch:
        if item.kind == "group" and item.high == 1 and item.low >= 1:  # part of the path
            seen = max(_paths(sub, seen) for sub in item.branches)
            continue
        if item.kind == "look":
            # Run again at every split the repetitions before it try, and its failure fails
            # the path: its paths continue this one (it consumes nothing after).
            for sub in item.branches:
                _paths(sub, seen)
        elif item.kind == "group" and item.high == 1:
            # Optional: what fails inside it does not fail the path (the group is skipped);
            # its own paths are checked from scratch, and its repetitions count after it.
            seen += max(_paths(sub, 0) for sub in item.branches)
        if seen >= 2 and item.can_fail():
            raise PatternError("an item that can fail after two repetitions")
        seen += item.repeats()
    return seen


def check_pattern(pattern: str) -> None:
    """PatternError naming the first construct of ``pattern`` whose cost is not bounded."""
    for branch in _Parser(pattern).parse():
        _paths(branch, 0)


def patterns_of(state: object) -> list[str]:
    """Every ``{"Regex": pattern}`` in a component's JSON state (nested sequences too)."""
    found: list[str] = []

    def visit(value: object) -> None:
        if isinstance(value, dict):
            regex = value.get("Regex")
            if isinstance(regex, str):
                found.append(regex)
            for sub in value.values():
                visit(sub)
        elif isinstance(value, list):
            for sub in value:
                visit(sub)

    visit(state)
    return found


def min_length(pattern: str) -> int:
    """The fewest characters a match of ``pattern`` (checked by :func:`check_pattern`) takes:
    0 when it can match nothing, which a ``Replace`` would then insert at every position.

    >>> min_length(" {2,}"), min_length("a*"), min_length("(?:ab)+x?|c")
    (2, 0, 1)
    """

    def least(branches: list[list[Item]]) -> int:
        return min(sum(item_least(item) for item in branch) for branch in branches)

    def item_least(item: Item) -> int:
        if item.kind in ("anchor", "look"):
            return 0
        return item.low * (least(item.branches) if item.kind == "group" else 1)

    return least(_Parser(pattern).parse())
