"""The server's body parser (the Rust extension's ``parse_score_body``, GIL released) against
the Python check it replaced (tests/server_body_reference.py: ``json.loads`` and checks on the
objects): the same result, or the same status, field and index, for every body."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
import server_body_reference as reference

from rust_bertscore.integrations.server.requests import RequestError, parse_score_body

SCALARS = [0, -0, 3, -12, 1.5, 1e5, True, False, None, "", "a", "é", "😀", "a\nb", '"q"', "\\"]


def random_text(rng: random.Random) -> str:
    pieces = ["a", "cat", " ", "é", "😀", "\n", '"', "\\", "\u2028", "\x7f", "東京", "\ud800"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))


def random_item(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if roll < 0.6:
        return random_text(rng)
    if roll < 0.8 or depth > 2:
        return rng.choice(SCALARS)
    if roll < 0.9:
        return [random_item(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {random_text(rng): random_item(rng, depth + 1) for _ in range(rng.randint(0, 2))}


def random_body(rng: random.Random) -> bytes:
    n = rng.randint(0, 4)
    cands = [random_text(rng) if rng.random() < 0.9 else random_item(rng) for _ in range(n)]
    grouped = rng.random() < 0.4
    refs: list[object] = []
    for _ in range(n + (rng.random() < 0.1)):
        if grouped:
            size = rng.randint(0 if rng.random() < 0.1 else 1, 3)
            refs.append(
                [random_text(rng) if rng.random() < 0.9 else random_item(rng) for _ in range(size)]
            )
        else:
            refs.append(random_text(rng) if rng.random() < 0.9 else random_item(rng))
    doc: dict[str, object] = {"cands": cands, "refs": refs}
    if rng.random() < 0.1:
        doc[rng.choice(["cands", "refs"])] = random_item(rng)
    if rng.random() < 0.1:
        del doc[rng.choice(["cands", "refs"])]
    if rng.random() < 0.1:
        doc[random_text(rng) or "x"] = random_item(rng)
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5)
    if rng.random() < 0.1:  # a duplicate key
        text = text.replace("{", '{"cands": [], ', 1)
    if rng.random() < 0.3:  # byte-level damage
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chars) + 1)
            if rng.random() < 0.5 and at < len(chars):
                del chars[at]
            else:
                chars.insert(at, rng.choice('[]{},:" \\u0123eE.-+aNIt\x01'))
        text = "".join(chars)
    return text.encode("utf-8", "surrogatepass")


def outcome(parse: object, body: bytes, max_pairs: int | None) -> tuple:
    try:
        request = parse(body, max_pairs)  # type: ignore[operator]
    except RequestError as e:
        # a key with a lone surrogate: Python keeps it, Rust spells it as its escape
        field = None if e.field is None else e.field.encode("utf-8", "backslashreplace").decode()
        return ("error", e.status, field, e.index, e.message)
    return ("ok", request.cands, request.refs)


def test_random_bodies_give_what_the_python_check_gave() -> None:
    rng = random.Random(57)
    differ, messages = [], 0
    for _ in range(4000):
        body = random_body(rng)
        max_pairs = rng.choice([None, 3, 100])
        want = outcome(reference.parse_score_body, body, max_pairs)
        got = outcome(parse_score_body, body, max_pairs)
        if got[:4] != want[:4] or (got[0] == "ok" and got != want):
            differ.append((body, want, got))
        messages += got != want
    assert not differ, "\n".join(f"{b!r}\n  python: {w}\n  rust:   {g}" for b, w, g in differ[:5])
    # Messages may differ in a value's spelling (a float, a container's source): rarely.
    assert messages < 4000 * 0.05, messages


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"[" * 30_000 + b"]" * 30_000, 400, "nested too deeply"),
        (b'{"cands": [' + b"7" * 5000 + b'], "refs": ["a"]}', 400, "digits"),
        (b'{"cands": ["a"], "refs": ["b"], "cands": ["c"]}', 400, "duplicate key 'cands'"),
        ('{"cands": ["a"], "refs": ["b"]}'.encode("utf-16"), 400, "not UTF-8"),
        ('{"cands": ["a"], "refs": ["b"]}'.encode("utf-8-sig"), 400, "BOM"),
        (b'{"cands": ["a"], "refs": ["b"]} x', 400, "Extra data at line 1 column 33"),
        (b'{"cands": ["\\ud800"], "refs": ["b"]}', 422, "lone surrogate '\\ud800'"),
    ],
)
def test_bodies_refused_as_before(body: bytes, status: int, says: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_score_body(body, 600)
    assert caught.value.status == status and says in caught.value.message
    with pytest.raises(RequestError) as before:
        reference.parse_score_body(body, 600)
    assert before.value.status == status


def test_a_body_of_nested_arrays_does_not_hold_the_interpreter() -> None:
    """An 8 MiB body of nested empty arrays held the GIL for 0.8-5 s in ``json.loads``: now
    another thread keeps running while it is parsed (and refused at its first item). A call
    that held the GIL would let the ticker move at most once across it."""
    body = b'{"refs": [], "cands": [' + b"[[[[[[[[[[]]]]]]]]]]," * 400_000 + b"1]}"
    ticks = [0]
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.0005)

    ticker = threading.Thread(target=tick)
    ticker.start()
    across = 0
    try:
        for _ in range(5):
            before = ticks[0]
            with pytest.raises(RequestError, match=r"cands\[0\] must be a str, got list"):
                parse_score_body(body, None)
            across += ticks[0] - before
    finally:
        stop.set()
        ticker.join()
    assert across > 10, across
