"""models/configs.py: config.json read without onnx, and the converter's registry agreeing with
its tables."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rust_bertscore as rb
from conftest import MORE, TINY
from rust_bertscore.catalog import configs
from rust_bertscore.convert.registry import CONVERTERS, build_model

PACKAGE = str(rb.__path__[0])


def test_configs_listing_and_tokenizer_import_neither_convert_nor_onnx() -> None:
    # The package's __init__ is bypassed (what `import rust_bertscore` loads is test_layout's
    # concern): these modules alone must not need the converter, onnx or onnxruntime.
    code = (
        "import sys, types\n"
        "pkg = types.ModuleType('rust_bertscore')\n"
        f"pkg.__path__ = [{PACKAGE!r}]\n"
        "sys.modules['rust_bertscore'] = pkg\n"
        "sys.modules['onnx'] = sys.modules['onnxruntime'] = None  # importing either fails\n"
        "import rust_bertscore.catalog.configs, rust_bertscore.catalog.listing\n"
        "import rust_bertscore.stages.tokenization.tokenizer\n"
        "print(sorted(m for m in sys.modules if m.startswith('rust_bertscore.convert')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_model_type_has_a_builder_and_a_family() -> None:
    assert set(CONVERTERS) == set(configs.SUPPORTED_MODEL_TYPES)
    assert set(configs.SUPPORTED_MODEL_TYPES.values()) == set(configs.SUPPORTED_FAMILIES)
    assert rb.convert.SUPPORTED_MODEL_TYPES is configs.SUPPORTED_MODEL_TYPES
    assert rb.convert.max_positions is configs.max_positions


def test_a_model_type_without_a_builder_is_refused(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "foo", "num_hidden_layers": 2}')
    with pytest.raises(ValueError, match="unsupported model_type 'foo'"):
        build_model(tmp_path, 1)
    monkeypatch.setitem(configs.SUPPORTED_MODEL_TYPES, "foo", "foo")
    with pytest.raises(ValueError, match="'foo' has no graph builder"):
        build_model(tmp_path, 1)


@pytest.mark.parametrize(
    ("config", "limit"),
    [
        ({"model_type": "big_bird"}, (5 + 2 * 3) * 64),  # transformers' defaults
        ({"model_type": "big_bird", "block_size": 16, "num_random_blocks": 2}, 9 * 16),
        ({"model_type": "big_bird", "attention_type": "original_full"}, None),
        ({"model_type": "bert"}, None),
    ],
)
def test_full_attention_limit(config: dict, limit: int | None) -> None:
    assert configs.full_attention_limit(config) == limit


def test_readers_on_checkpoints() -> None:
    roberta = configs.load_config(TINY / "roberta")
    assert configs.model_family(roberta) == "roberta"
    n_positions = roberta["max_position_embeddings"]
    assert configs.max_positions(roberta) == n_positions - roberta["pad_token_id"] - 1
    assert configs.model_depth(roberta) == roberta["num_hidden_layers"]
    assert configs.max_positions(configs.load_config(TINY / "t5")) is None
    led = configs.load_config(MORE / "led")
    assert configs.model_depth(led) == led["encoder_layers"]
    assert configs.max_positions(led) == led["max_encoder_position_embeddings"]
