"""BERTScore for Hugging Face ``evaluate``, computed by rust-bertscore (no torch).

Load it with ``evaluate.load(rust_bertscore.evaluate_module())``. Arguments and output are those
of evaluate's ``bertscore`` metric; the work is done by ``rust_bertscore.integrations.hf_evaluate``.
"""

from __future__ import annotations

import datasets
import evaluate

import rust_bertscore
from rust_bertscore.integrations.hf_evaluate import EvaluateBackend

_CITATION = """\
@inproceedings{bert-score,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Tianyi Zhang* and Varsha Kishore* and Felix Wu* and Kilian Q. Weinberger and Yoav Artzi},
  booktitle={International Conference on Learning Representations},
  year={2020},
  url={https://openreview.net/forum?id=SkeHuCVFDr}
}
"""

_DESCRIPTION = """\
BERTScore matches the tokens of a candidate and a reference by the cosine similarity of their
contextual embeddings and reports precision, recall and F1. This module computes it with
rust-bertscore (a Rust kernel and ONNX Runtime, no PyTorch): the numbers of bert_score 0.3.13.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): candidate sentences.
    references (list of str, or list of list of str): one reference per prediction, or several
        (P, R and F1 are then each the best over the prediction's references).
    lang (str): language of the texts (e.g. 'en'): picks the model and the rescale baseline;
        give `lang` or `model_type`.
    model_type (str): Hugging Face model id, checkpoint directory or exported .onnx file.
    num_layers (int): layer to use; default bert_score's tuned layer, else the last.
    verbose (bool): print progress.
    idf (bool or dict): IDF weighting over the references of this call, or a ready
        {token id: weight} dict.
    device (str): 'cpu', 'cuda' or 'cuda:N'; None picks CUDA when ONNX Runtime offers it.
    batch_size (int): texts per encoder call (and pairs per scoring batch).
    nthreads (int): accepted for compatibility (threads: RUST_BERTSCORE_NUM_THREADS).
    all_layers (bool): scores of every layer (lists of lists, one per layer).
    rescale_with_baseline (bool): rescale with the baseline of model and `lang`.
    baseline_path (str): a custom baseline file.
    use_fast_tokenizer (bool): tokenise with the model's fast tokenizer (tokenizer.json),
        as bert_score does.

Returns:
    precision (list of float), recall (list of float), f1 (list of float), hashcode (str).

Examples:

    >>> import evaluate, rust_bertscore
    >>> bertscore = evaluate.load(rust_bertscore.evaluate_module())
    >>> results = bertscore.compute(predictions=["hello there"], references=["hello there"],
    ...                             model_type="sentence-transformers/all-MiniLM-L6-v2")
    >>> [round(v, 2) for v in results["f1"]]
    [1.0]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BERTScore(evaluate.Metric):
    """evaluate's ``bertscore`` metric, computed by rust-bertscore."""

    def _info(self) -> evaluate.MetricInfo:
        text = datasets.Value("string", id="sequence")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage="https://github.com/Tiiiger/bert_score",
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features(
                    {
                        "predictions": text,
                        "references": datasets.Sequence(text, id="references"),
                    }
                ),
                datasets.Features({"predictions": text, "references": text}),
            ],
            codebase_urls=["https://github.com/Tiiiger/bert_score"],
            reference_urls=["https://arxiv.org/abs/1904.09675"],
        )

    def _compute(self, predictions, references, **kwargs):  # type: ignore[no-untyped-def]
        backend = getattr(self, "_rust_bertscore", None)
        if backend is None:
            backend = EvaluateBackend()
            self._rust_bertscore = backend
        return backend.compute(predictions, references, **kwargs)


__all__ = ["BERTScore", "rust_bertscore"]
