"""The boundary with the outside (support/boundary.py, issue 57): a FIFO, directory or socket
where a file is expected is refused at once with the typed error naming the file, in every
place a model load reads (root cause A: each of these hung for ever); a panic or bare exception
of the ``tokenizers`` library, at load or on a text, is the package's typed error naming the
file or the text, and the process goes on scoring (root cause B); the fast SentencePiece path
reads its ``.model`` within the tokenizer cap (D)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rust_bertscore as rb
from conftest import TINY
from rust_bertscore.errors import (
    CheckpointError,
    InputValueError,
    ModelLoadError,
    RustBertScoreError,
)
from rust_bertscore.support import boundary, inputs

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail (TimeoutError) instead of hanging: a blocking open of a FIFO is interrupted."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s: the input hangs")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def copy_model(tmp_path: Path, name: str = "bert") -> Path:
    model = tmp_path / name
    shutil.copytree(TINY / name, model)
    return model


def plant(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json")


@pytest.mark.parametrize("kind", ["fifo", "directory", "socket"])
@pytest.mark.parametrize("name", FILES)
def test_a_special_file_in_a_model_folder_is_refused_at_once(
    tmp_path: Path, name: str, kind: str
) -> None:
    model = copy_model(tmp_path)
    if name == "special_tokens_map.json":  # read only in the legacy layout, as transformers
        config = json.loads((model / "tokenizer_config.json").read_text())
        del config["added_tokens_decoder"]
        (model / "tokenizer_config.json").write_text(json.dumps(config))
    plant(model / name, kind)
    with deadline(20), pytest.raises(RustBertScoreError) as caught:
        rb.BERTScorer(model_type=str(model), num_layers=2)
    assert f"{name}: " in str(caught.value) and "expected a regular file" in str(caught.value)


@pytest.mark.parametrize("kind", ["fifo", "directory", "socket"])
def test_a_special_tokenizer_json_is_not_a_tokenizer_json(tmp_path: Path, kind: str) -> None:
    """As transformers decides (``os.path.isfile``): no tokenizer.json, so the vocabulary files
    serve, with the same numbers; never a wait on the FIFO."""
    model = copy_model(tmp_path)
    plant(model / "tokenizer.json", kind)
    with deadline(20):
        got = rb.score(["a cat sat"], ["the cat sat"], model_type=str(model), num_layers=2)
    want = rb.score(["a cat sat"], ["the cat sat"], model_type=str(TINY / "bert"), num_layers=2)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_special_file_as_the_baseline_is_refused(tmp_path: Path, kind: str) -> None:
    baseline = tmp_path / "baseline.csv"
    plant(baseline, kind)
    with deadline(20), pytest.raises(InputValueError, match=r"baseline\.csv"):
        rb.score(
            ["a cat"],
            ["a dog"],
            model_type=str(TINY / "bert"),
            num_layers=2,
            rescale_with_baseline=True,
            baseline_path=str(baseline),
        )


def test_a_fifo_as_the_graph_is_refused(tmp_path: Path) -> None:
    from rust_bertscore.stages.encoder import Encoder

    graph = tmp_path / "model.onnx"
    os.mkfifo(graph)
    with deadline(20), pytest.raises(ModelLoadError, match=r"model\.onnx: a FIFO"):
        Encoder(graph)


def test_read_and_check_refuse_every_special_file(tmp_path: Path) -> None:
    for kind in ("fifo", "directory", "socket"):
        path = tmp_path / f"x-{kind}"
        plant(path, kind)
        for read in (inputs.read_bytes, inputs.check_file, inputs.read_json):
            with deadline(10), pytest.raises(InputValueError, match="expected a regular file"):
                read(path, max_bytes=100, error=InputValueError)
        assert inputs.read_memo(path) is None  # a cache's memo: missing, rebuilt
    with pytest.raises(FileNotFoundError):
        inputs.read_bytes(tmp_path / "missing", max_bytes=1, error=InputValueError)


def test_reads_are_bounded_by_the_files_real_size(tmp_path: Path) -> None:
    sparse = tmp_path / "vocab.txt"
    with open(sparse, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB of holes: refused by its size, nothing read
    with pytest.raises(InputValueError, match="over the limit"):
        inputs.read_bytes(sparse, max_bytes=inputs.MAX_TOKENIZER_BYTES, error=InputValueError)
    small = tmp_path / "small"
    small.write_bytes(b"x" * 1000)
    assert boundary.read_regular(small, max_bytes=1000, error=InputValueError) == b"x" * 1000


# ---- B: the tokenizers library's panics and bare exceptions ---------------------------------


def with_tokenizer_json(tmp_path: Path, change: dict) -> Path:
    """The tiny BERT with ``change`` in tokenizer.json, which decides without vocab.txt."""
    model = copy_model(tmp_path)
    (model / "vocab.txt").unlink()
    spec = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    spec.update(change)
    (model / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return model


CATASTROPHIC_SPLIT = {
    "pre_tokenizer": {
        "type": "Split",
        "pattern": {"Regex": "(a+)+$"},
        "behavior": "Isolated",
        "invert": False,
    }
}


def test_a_catastrophic_regex_is_refused_at_load_and_the_process_goes_on(
    tmp_path: Path,
) -> None:
    """``(a+)+$`` panics on ``"a" * 30 + "!"`` (Oniguruma's retry limit) after ~0.3 s per
    attempt: the tokenizer is refused before any text meets it."""
    model = with_tokenizer_json(tmp_path, CATASTROPHIC_SPLIT)
    with deadline(20), pytest.raises(InputValueError, match=r"pattern '\(a\+\)\+\$' is refused"):
        rb.BERTScorer(model_type=str(model), num_layers=2).score(["a" * 30 + "!"], ["a ref"])
    clean = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2)
    assert clean.score(["fine text"], ["a ref"])[2].shape == (1,)


def test_a_panic_on_a_text_names_the_text_and_the_tokenizer_goes_on() -> None:
    """Whatever the library raises on one text (a Rust panic is a BaseException) names that
    text; the same tokenizer then encodes texts it handles."""
    from tokenizers import Tokenizer

    from rust_bertscore.stages.tokenization.fast import FastIds

    class Panicking:
        def __init__(self, real: Tokenizer) -> None:
            self.real = real

        def __getattr__(self, name: str) -> object:
            return getattr(self.real, name)

        def encode(self, text: str, add_special_tokens: bool = False) -> object:
            if "!" in text:
                raise BaseException("a panic from a Rust library")
            return self.real.encode(text, add_special_tokens=add_special_tokens)

        def encode_batch(self, texts: list[str], add_special_tokens: bool = False) -> object:
            return [self.encode(t, add_special_tokens) for t in texts]

    fast = FastIds(Panicking(Tokenizer.from_file(str(TINY / "bert" / "tokenizer.json"))), "tiny")
    with pytest.raises(InputValueError, match=r"tiny cannot encode text 1 \('aaa!'\)"):
        fast.encode_batch(["fine text", "aaa!"])
    assert fast.encode_batch(["fine text"])[0]


def test_a_panicking_normaliser_is_a_typed_error_naming_the_folder(tmp_path: Path) -> None:
    charsmap = base64.b64encode(np.random.default_rng(0).bytes(300)).decode()
    model = with_tokenizer_json(
        tmp_path, {"normalizer": {"type": "Precompiled", "precompiled_charsmap": charsmap}}
    )
    with pytest.raises(InputValueError, match=str(model.name)):
        scorer = rb.BERTScorer(model_type=str(model), num_layers=2)
        scorer.score(["hello world"], ["hello there"])


def test_foreign_call_keeps_interrupts_and_own_errors() -> None:
    with pytest.raises(KeyboardInterrupt), boundary.foreign_call("x", InputValueError):
        raise KeyboardInterrupt
    with pytest.raises(MemoryError), boundary.foreign_call("x", InputValueError):
        raise MemoryError
    with pytest.raises(CheckpointError), boundary.foreign_call("x", InputValueError):
        raise CheckpointError("own")
    with (
        pytest.raises(FileNotFoundError),
        boundary.foreign_call("x", InputValueError, (FileNotFoundError,)),
    ):
        raise FileNotFoundError("kept")
    with (
        pytest.raises(InputValueError, match="x: RuntimeError: boom"),
        boundary.foreign_call("x", InputValueError),
    ):
        raise RuntimeError("boom")


# ---- D: the fast SentencePiece path reads its .model within the cap --------------------------


def test_fast_sentencepiece_model_is_read_within_the_cap(tmp_path: Path) -> None:
    from rust_bertscore.stages.tokenization.programs import read_model_proto

    huge = tmp_path / "spiece.model"
    with open(huge, "wb") as f:
        f.truncate(inputs.MAX_TOKENIZER_BYTES + 1)
    with pytest.raises(InputValueError, match="over the limit"):
        read_model_proto(huge)
    fifo = tmp_path / "fifo.model"
    os.mkfifo(fifo)
    with deadline(10), pytest.raises(InputValueError, match="a FIFO"):
        read_model_proto(fifo)
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"\xff" * 64)
    with pytest.raises(InputValueError, match=r"garbage\.model"):
        read_model_proto(garbage)


# ---- C and F: safetensors headers ------------------------------------------------------------


def write_safetensors(path: Path, header_json: str, data: bytes = b"") -> None:
    raw = header_json.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)


def test_a_tensor_named_twice_is_refused(tmp_path: Path) -> None:
    from rust_bertscore.convert.safetensors_header import read_header

    first = '{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
    second = '{"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}'
    header = f'{{"w": {first}, "w": {second}}}'
    path = tmp_path / "model.safetensors"
    write_safetensors(path, header, b"\0" * 8)
    with pytest.raises(CheckpointError, match="'w' appears twice"):
        read_header(path)


def test_a_header_of_too_many_tensors_is_refused_before_work(tmp_path: Path) -> None:
    from rust_bertscore.convert.safetensors_header import MAX_TENSORS, read_header

    entries = ",".join(
        f'"t{i}": {{"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'
        for i in range(MAX_TENSORS + 10)
    )
    path = tmp_path / "model.safetensors"
    write_safetensors(path, "{" + entries + "}")
    with deadline(60), pytest.raises(CheckpointError, match="over the limit of"):
        read_header(path)


def test_a_fifo_as_the_weights_is_refused(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    plant(model / "model.safetensors", "fifo")
    # Not a file, as transformers decides (os.path.isfile): the folder has no weights.
    with deadline(20), pytest.raises(FileNotFoundError, match="no weights"):
        rb.score(["a cat"], ["a dog"], model_type=str(model), num_layers=2)


# ---- G: symbolic links, and where they may lead ----------------------------------------------


def score_with(model: str) -> np.ndarray:
    return rb.score(["a cat sat"], ["the cat sat"], model_type=model, num_layers=2)[2]


def test_a_weights_link_out_of_the_folder_is_refused_before_any_read(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    other = copy_model(tmp_path / "elsewhere")  # another checkpoint's weights, outside
    (model / "model.safetensors").unlink()
    os.symlink(other / "model.safetensors", model / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: a symbolic link to .*outside"):
        score_with(str(model))


def test_a_config_link_to_a_system_file_is_refused(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    (model / "config.json").unlink()
    os.symlink("/etc/passwd", model / "config.json")
    with pytest.raises(CheckpointError, match=r"config\.json: a symbolic link to"):
        rb.BERTScorer(model_type=str(model), num_layers=2)


def test_links_inside_the_folder_are_followed(tmp_path: Path) -> None:
    model = copy_model(tmp_path)
    (model / "weights").mkdir()
    (model / "model.safetensors").rename(model / "weights" / "real.safetensors")
    os.symlink("weights/real.safetensors", model / "model.safetensors")
    linked_dir = tmp_path / "linked"
    os.symlink(model, linked_dir)  # the folder itself may be reached through a link
    np.testing.assert_array_equal(score_with(str(linked_dir)), score_with(str(TINY / "bert")))


def hub_layout(root: Path, repo_id: str) -> Path:
    """A Hugging Face cache of ``repo_id`` as huggingface_hub lays it out: blobs by content,
    the snapshot's files links into ../../blobs."""
    from conftest import REVISION

    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for f in (TINY / "bert").iterdir():
        if f.suffix != ".npz":
            blob = repo / "blobs" / f"blob-{f.name}"
            shutil.copy(f, blob)
            os.symlink(Path("..", "..", "blobs", blob.name), snapshot / f.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    return repo


def test_a_hub_snapshot_follows_its_links_into_blobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    hub_layout(tmp_path, "someone/tiny-bert")
    np.testing.assert_array_equal(score_with("someone/tiny-bert"), score_with(str(TINY / "bert")))


def test_a_hub_ref_that_leads_out_of_the_cache_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = hub_layout(cache, "someone/tiny-bert-ref")
    outside = copy_model(tmp_path / "outside")
    (repo / "refs" / "main").write_text(os.path.relpath(outside, repo / "snapshots"))
    with pytest.raises(RustBertScoreError, match="not a snapshot of"):
        score_with("someone/tiny-bert-ref")


def test_a_snapshot_link_out_of_the_repository_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import REVISION

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = hub_layout(cache, "someone/tiny-bert-link")
    other = copy_model(tmp_path / "elsewhere")
    weights = repo / "snapshots" / REVISION / "model.safetensors"
    weights.unlink()
    os.symlink(other / "model.safetensors", weights)
    with pytest.raises(CheckpointError, match="outside"):
        score_with("someone/tiny-bert-link")


def test_a_huge_thread_count_is_refused_not_crashed() -> None:
    """RUST_BERTSCORE_NUM_THREADS=100000 asked for 100,000 threads and killed the process."""
    import subprocess
    import sys

    code = (
        "import rust_bertscore as rb\n"
        "try:\n"
        f"    rb.score(['a cat'], ['a dog'], model_type={str(TINY / 'bert')!r}, num_layers=2)\n"
        "except rb.errors.RustBertScoreError as e:\n"
        "    print('refused:', e)\n"
    )
    env = {**os.environ, "RUST_BERTSCORE_NUM_THREADS": "100000"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused: RUST_BERTSCORE_NUM_THREADS must be an integer from 1 to 1024" in out.stdout
    with pytest.raises(RustBertScoreError, match="from 1 to 1024, got 5000"):
        rb.set_num_threads(5000)


# ---- one way in: no module reads a file any other way -----------------------------------------

READ_CALLS = ("open()", ".open()", "os.open()", ".read_text()", ".read_bytes()", "np.load()")
EXEMPT = "# boundary-exempt:"


def _write_mode(node: object) -> bool:
    import ast

    assert isinstance(node, ast.Call)
    mode: object = None
    if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        mode = node.args[1].value
    for kw in node.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            mode = kw.value.value
    return isinstance(mode, str) and any(c in mode for c in "wax+")


LIBRARY_READERS = frozenset(
    {"from_file", "read_file", "InferenceSession", "read_model", "Load", "LoadFromFile"}
)
"""Calls that hand a path to a library which opens it (tokenizers, sentencepiece, ONNX Runtime,
OpenVINO; and ``onnx.load``): the path must come from ``support.boundary.library_path``."""


def library_path_names(tree: object) -> set[str]:
    """Names bound by ``with library_path(...) as name`` in ``tree``."""
    import ast

    names = set()
    for node in ast.walk(tree):  # type: ignore[arg-type]
        if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            call = node.context_expr
            if isinstance(call, ast.Name) or (
                isinstance(call, ast.Call) and getattr(call.func, "id", "") == "library_path"
            ):  # ``checked = library_path(...)`` then ``with checked``
                names.add(node.optional_vars.id)
    return names


def _checked_path(call: object, checked: set[str]) -> bool:
    """Whether ``call``'s first argument is a name ``library_path`` yielded, or not a path (a
    buffer, bytes: ``io.BytesIO(...)``, ``source`` in memory)."""
    import ast

    args = getattr(call, "args", [])
    if not args:
        return True
    first = args[0]
    if isinstance(first, ast.Name):
        return first.id in checked
    if isinstance(first, ast.Call) and getattr(first.func, "attr", "") == "BytesIO":
        return True
    return not (isinstance(first, ast.Call) and getattr(first.func, "id", "") == "str")


def file_reads(source: str) -> list[tuple[int, str]]:
    """``(line, call)`` of every call in ``source`` that opens or reads a file by its path:
    ``open()`` and ``Path.open()`` (not for writing), ``os.open()``, ``read_text()``,
    ``read_bytes()``, ``np.load()``; a call whose lines (or the line before) hold
    ``# boundary-exempt: <why>`` is left out."""
    import ast

    lines = source.splitlines()
    found = []
    tree = ast.parse(source)
    checked = library_path_names(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn, what = node.func, None
        if isinstance(fn, ast.Name) and fn.id == "open" and not _write_mode(node):
            what = "open()"
        elif isinstance(fn, ast.Attribute):
            owner = fn.value.id if isinstance(fn.value, ast.Name) else ""
            if fn.attr in ("read_text", "read_bytes"):
                what = f".{fn.attr}()"
            elif fn.attr == "open" and owner == "os":
                flags = ast.get_source_segment(source, node) or ""
                if not any(w in flags for w in ("O_CREAT", "O_WRONLY", "O_RDWR", "_CREATE")):
                    what = "os.open()"
            elif fn.attr == "open" and not _write_mode(node):
                what = ".open()"
            elif fn.attr in ("load", "fromfile", "memmap") and owner in ("np", "numpy"):
                what = "np.load()"
            elif (
                fn.attr in LIBRARY_READERS or (fn.attr == "load" and owner == "onnx")
            ) and not _checked_path(node, checked):
                what = f"a path handed to .{fn.attr}()"
        end = node.end_lineno or node.lineno
        if what and not any(EXEMPT in line for line in lines[max(node.lineno - 2, 0) : end]):
            found.append((node.lineno, what))
    return found


def test_every_file_read_goes_through_the_boundary() -> None:
    """support/boundary.py opens every file from outside; elsewhere a read by path needs a
    ``# boundary-exempt: <why>`` on its line (the package's own assets, the user's text streams
    on the command line, kernel pseudo-files, files this package wrote and verifies)."""
    root = Path(rb.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "boundary.py" and path.parent.name == "support":
            continue
        for line, what in file_reads(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(root)}:{line}: {what}")
    assert offenders == [], "reads outside support/boundary.py:\n" + "\n".join(offenders)


def test_the_scan_finds_reads() -> None:
    src = (
        "open(p)\nopen(p, 'rb')\nopen(p, 'w')\nPath(p).read_text()\nos.open(p, 0)\n"
        "np.load(p)\nopen(p)  # boundary-exempt: test\n\nq.open()\n"
    )
    assert [w for _, w in file_reads(src)] == [
        "open()",
        "open()",
        ".read_text()",
        "os.open()",
        "np.load()",
        ".open()",
    ]


# ---- what the attacker (a helper briefed with docs/inputs.md only) found -----------------------


@pytest.mark.parametrize("kind", ["fifo", "sparse"])
def test_a_hub_ref_that_is_not_a_small_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    repo = hub_layout(tmp_path, f"someone/tiny-bert-ref-{kind}")
    ref = repo / "refs" / "main"
    ref.unlink()
    if kind == "fifo":
        os.mkfifo(ref)
    else:
        with open(ref, "wb") as f:
            f.truncate(8 << 30)
    with deadline(20), pytest.raises(CheckpointError, match=r"refs/main"):
        score_with(f"someone/tiny-bert-ref-{kind}")


def test_a_zero_size_tensor_of_a_huge_shape_is_refused(tmp_path: Path) -> None:
    from rust_bertscore.convert.safetensors_header import read_header

    path = tmp_path / "model.safetensors"
    write_safetensors(
        path,
        '{"w": {"dtype": "F32", "shape": [0, 4611686018427387904, 2], "data_offsets": [0, 0]}}',
    )
    with pytest.raises(CheckpointError, match=r"integers in 0\.\."):
        read_header(path)


def test_an_output_with_inf_or_nan_is_an_error_not_zero_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Weights or a config value past float32's range (or float16's) make the encoder's output
    inf or NaN: the kernel refuses such vectors, naming the text and token, rather than scoring
    them (a check in the encoder as well would cost a pass over every vector)."""
    scorer = rb.BERTScorer(model_type=str(TINY / "bert"), num_layers=2, cache_bytes=0)
    encoder = scorer.runtime.encoder
    real = encoder._run  # the runtime's output, made non-finite below

    def overflowing(*args: object, **kwargs: object) -> np.ndarray:
        out = real(*args, **kwargs).copy()
        out.flat[5] = np.inf
        return out

    monkeypatch.setattr(encoder, "_run", overflowing)
    with pytest.raises(RustBertScoreError, match="contains NaN or infinity"):
        scorer.score(["a cat sat"], ["the cat sat"])
    monkeypatch.undo()
    assert np.isfinite(scorer.score(["a cat sat"], ["the cat sat"])[2]).all()


def test_a_directory_where_a_cached_graph_goes_costs_a_conversion_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("RUST_BERTSCORE_CACHE", str(cache))
    model = copy_model(tmp_path)
    want = score_with(str(model))
    rb.clear_cache()
    (graph,) = cache.glob("onnx/*/model.onnx")
    graph.unlink()
    graph.mkdir()
    with pytest.warns(rb.RustBertScoreWarning, match="cannot"):
        got = score_with(str(model))
    np.testing.assert_array_equal(got, want)
    rb.clear_cache()


def test_a_pad_token_id_past_the_vocabulary_is_refused_at_load(tmp_path: Path) -> None:
    """transformers refuses it when it builds the embedding; here it failed only when a batch
    ran, in ONNX Runtime's words."""
    model = copy_model(tmp_path)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config["pad_token_id"] = config["vocab_size"] + 5
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"config.json of .*: pad_token_id \d+ is past"):
        rb.BERTScorer(model_type=str(model), num_layers=2, cache_bytes=0).score(["a"], ["b"])


@pytest.mark.parametrize("value", ["0.9999999999999999", "-1e300"])
def test_a_baseline_that_float32_cannot_hold_is_refused_naming_the_line(
    tmp_path: Path, value: str
) -> None:
    """Below 1 and finite in float64, but 1 or -inf in float32 (what rescaling uses): refused
    naming the file and line, not by the kernel naming neither."""
    from rust_bertscore.stages.rescale import read_baseline

    path = tmp_path / "b.csv"
    path.write_text(f"LAYER,P,R,F\n0,0.1,0.2,0.3\n1,0.5,{value},0.4\n", encoding="utf-8")
    with pytest.raises(InputValueError, match=r"b\.csv:3: baselines must be finite and below 1"):
        read_baseline(path)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"num_attention_heads": 3}, "not a multiple of the number of heads 3"),
        ({"type_vocab_size": 0}, "type_vocab_size must be >= 1"),
        ({"hidden_act": "evil"}, "unsupported activation 'evil'"),
    ],
)
def test_a_config_the_family_refuses_names_config_json(
    tmp_path: Path, change: dict, says: str
) -> None:
    model = copy_model(tmp_path)
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    config.update(change)
    (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(RustBertScoreError, match=rf"{model.name}/config\.json: .*{says}"):
        rb.BERTScorer(model_type=str(model), num_layers=2, cache_bytes=0).score(["a"], ["b"])
