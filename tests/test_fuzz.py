"""The mutation fuzzer of tests/fuzzing.py in ``make test``: a few hundred seeded cases over every
parser of outside input, the findings saved under tests/data/fuzz/ replayed, and the harness
itself shown to pin a crash, a hang and a case past the memory cap on the case that caused it.

Each case runs in a worker subprocess under ``RLIMIT_AS`` (its size after imports plus
``fuzzing.MEMORY_CAP``) and a timeout; the only allowed outcomes are a typed error
(``RustBertScoreError``) or a good load. ``make fuzz`` runs the same for a given time."""

from __future__ import annotations

import json
from pathlib import Path

import fuzzing
import pytest

SEEDS_PER_TARGET = 50
"""Seeded cases per target in ``make test`` (seeds 0..49 of every target)."""

NOT_BIN = [name for name in fuzzing.TARGETS if name != "bin"]
"""The targets of test_seeded_cases; the slower .bin target has its own test."""


def report(outcomes: list[fuzzing.Outcome]) -> str:
    return "\n".join(f"{o.case}: {o.status}: {o.detail}" for o in outcomes)


def run(cases: list[list], timeout: float = fuzzing.CASE_TIMEOUT) -> list[fuzzing.Outcome]:
    outcomes = fuzzing.run_batch(cases, timeout=timeout)
    assert [o.case for o in outcomes] == cases  # every case answered, in order
    return outcomes


def test_seeded_cases() -> None:
    cases = [[name, seed] for seed in range(SEEDS_PER_TARGET) for name in NOT_BIN]
    outcomes = run(cases)
    found = [o for o in outcomes if fuzzing.is_finding(o)]
    assert not found, report(found)
    # The mutations reach past the first check: some cases of every target load.
    for name in NOT_BIN:
        statuses = {o.status for o in outcomes if o.case[0] == name}
        assert ("ok" if name in fuzzing.HEALING else "typed") in statuses, (name, statuses)


def test_seeded_bin_cases() -> None:
    """``.bin`` files: pickle opcodes and arguments, zip directory fields, cut or grown
    storages, a compressible ``data.pkl``."""
    outcomes = run([["bin", seed] for seed in range(SEEDS_PER_TARGET)])
    found = [o for o in outcomes if fuzzing.is_finding(o)]
    assert not found, report(found)


def saved_findings() -> list[Path]:
    return sorted(p.parent for p in fuzzing.FINDINGS.glob("*/case.json"))


@pytest.fixture(scope="module")
def replayed() -> dict[str, fuzzing.Outcome]:
    """Every saved finding replayed in one batch, by directory name."""
    cases, names = [], []
    for directory in saved_findings():
        meta = json.loads((directory / "case.json").read_text())
        cases.append([meta["target"], meta["file"], str(directory / "input.bin")])
        names.append(directory.name)
    return dict(zip(names, run(cases)))


@pytest.mark.parametrize("directory", saved_findings(), ids=lambda d: d.name)
def test_saved_finding_is_fixed(directory: Path, replayed: dict[str, fuzzing.Outcome]) -> None:
    """Each input a fuzzing run found (tests/data/fuzz/<target>-<seed>/: the mutated file and
    case.json) now ends in a typed error or a good load."""
    outcome = replayed[directory.name]
    assert not fuzzing.is_finding(outcome), report([outcome])


def test_the_harness_pins_each_outcome_on_its_case() -> None:
    cases = [
        ["selftest-typed", 0],
        ["selftest-crash", 0],
        ["selftest-typed", 1],
        ["selftest-hang", 0],
        ["selftest-memory", 0],
        ["selftest-foreign", 0],
        ["selftest-typed", 2],
    ]
    outcomes = run(cases, timeout=5.0)
    statuses = [o.status for o in outcomes]
    assert statuses == ["typed", "crash", "typed", "hang", "bad", "bad", "typed"], report(outcomes)
    assert "MemoryError" in outcomes[4].detail
    assert "KeyError" in outcomes[5].detail
    assert "-11" in outcomes[1].detail  # SIGSEGV


def test_cases_are_replayable(tmp_path: Path) -> None:
    """A case is its target and seed: the same mutated bytes every time."""
    target = fuzzing.TARGETS["safetensors"]
    target.base(tmp_path)
    assert fuzzing.make_case(target, 7, tmp_path) == fuzzing.make_case(target, 7, tmp_path)
    assert fuzzing.make_case(target, 7, tmp_path) != fuzzing.make_case(target, 8, tmp_path)
