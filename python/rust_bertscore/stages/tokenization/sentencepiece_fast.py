"""The fast tokenizer of a SentencePiece checkpoint that ships no ``tokenizer.json``.

bert_score's ``use_fast_tokenizer=True`` calls ``AutoTokenizer.from_pretrained(model,
use_fast=True)``. For a checkpoint with only its SentencePiece model (T5, mT5, mBART, mBART-50,
XLNet, DeBERTa-v3 as the Hub has them; Pegasus, BigBird), transformers 4.57 builds the fast
tokenizer from the slow one (``convert_slow_tokenizer.py``). This module builds the same
``tokenizers.Tokenizer`` from the ``.model`` file, so that ``use_fast_tokenizer=True`` gives
bert_score's fast-path ids. The fast tokenizer is not the slow one: it normalises with
SentencePiece's own character map, puts ``▁`` before every word, and runs a Unigram model on
the pieces, so on the same text its ids may differ from the slow tokenizer's (tested against
bert_score on the tiny checkpoints).

What each converter does (transformers 4.57.6, ``*Converter`` classes), for a Unigram model:

- vocabulary: the pieces with their scores; ALBERT/XLNet lower a piece ending in a digit and a
  comma (``9,``) by 100; T5 appends ``<extra_id_{n-1}>`` .. ``<extra_id_0>``; mBART and
  mBART-50 put ``<s> <pad> </s> <unk>`` first (fairseq's ids), then the pieces after the third,
  the language codes and ``<mask>``; Pegasus puts its pad, eos, mask and ``<unk_N>`` tokens
  below ``offset`` and the pieces after the second above it;
- normaliser: SentencePiece's precompiled character map, then right-strip and runs of spaces to
  ``▁`` (T5, mBART, Pegasus, BigBird); ALBERT/XLNet: ``\\`\\``/``''`` to ``"``, NFKD and
  accent stripping unless ``keep_accents``, lowercase with ``do_lower_case``, the map, runs of
  spaces to one space; DeBERTa-v2/v3: lowercase with ``do_lower_case``, strip, the map, runs
  of spaces to one;
- pre-tokeniser: ``Metaspace`` (``▁``, prepended always; T5 with ``add_prefix_space=False``
  never, with ``legacy=False`` before the first word only), after DeBERTa's punctuation split
  when ``split_by_punct`` and after a split on whitespace for Pegasus;
- added tokens: the model's control and user-defined pieces, then the checkpoint's added and
  special tokens with their saved flags (``lstrip``, ``rstrip``, ``normalized``).
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import AddedToken as RustAddedToken
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from ...errors import InputValueError
from .added_tokens import AddedToken, collect_added_tokens
from .classes import TokenizerClass
from .programs import read_model_proto
from .sentencepiece import pegasus_added_ids, pegasus_offset

SPIECE_UNDERLINE = "\u2581"

_UNIGRAM = 1
"""``trainer_spec.model_type`` of a Unigram model (2 is BPE)."""
_CONTROL, _USER_DEFINED = 3, 4
"""``ModelProto.SentencePiece.Type`` of the pieces a converter adds as added tokens."""

CONVERTED_CLASSES = frozenset(
    {
        "T5Tokenizer",
        "MT5Tokenizer",
        "AlbertTokenizer",
        "XLNetTokenizer",
        "DebertaV2Tokenizer",
        "MBartTokenizer",
        "MBart50Tokenizer",
        "PegasusTokenizer",
        "BigBirdTokenizer",
    }
)
"""Slow SentencePiece classes whose fast tokenizer this module builds."""

_LOWERCASE_DEFAULT = {"AlbertTokenizer": True}
"""``do_lower_case`` where the class's default is not False."""


def _check_number_comma(piece: str) -> bool:
    return len(piece) < 2 or piece[-1] != "," or not piece[-2].isdigit()


def _vocab(
    proto: object, cls: TokenizerClass, sentinels: int, tok_config: dict
) -> list[tuple[str, float]]:
    pieces = proto.pieces  # type: ignore[attr-defined]
    if cls.name == "PegasusTokenizer":
        low = pegasus_added_ids(tok_config, pegasus_offset(tok_config))
        head = [(t, -100.0 if t.startswith("<unk_") else 0.0) for t in low]
        return [*head, *((p.piece, p.score) for p in pieces[2:])]
    if cls.name in ("AlbertTokenizer", "XLNetTokenizer"):
        return [
            (p.piece, p.score if _check_number_comma(p.piece) else p.score - 100) for p in pieces
        ]
    if cls.name in ("MBartTokenizer", "MBart50Tokenizer"):
        head = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
        body = [(p.piece, p.score) for p in pieces[3:]]
        codes = [(code, 0.0) for code in cls.language_codes]
        return [*head, *body, *codes, ("<mask>", 0.0)]
    vocab = [(p.piece, p.score) for p in pieces]
    if cls.name in ("T5Tokenizer", "MT5Tokenizer"):
        vocab += [(f"<extra_id_{i}>", 0.0) for i in range(sentinels - 1, -1, -1)]
    return vocab


def _normalizer(proto: object, cls: TokenizerClass, tok_config: dict) -> normalizers.Normalizer:
    charsmap = proto.normalizer_spec.precompiled_charsmap  # type: ignore[attr-defined]
    precompiled = [normalizers.Precompiled(charsmap)] if charsmap else []
    lowercase = bool(tok_config.get("do_lower_case", _LOWERCASE_DEFAULT.get(cls.name, False)))
    steps: list[normalizers.Normalizer]
    if cls.name in ("AlbertTokenizer", "XLNetTokenizer"):
        steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
        if not tok_config.get("keep_accents", False):
            steps += [normalizers.NFKD(), normalizers.StripAccents()]
        if lowercase:
            steps.append(normalizers.Lowercase())
        steps += [*precompiled, normalizers.Replace(Regex(" {2,}"), " ")]
    elif cls.name == "DebertaV2Tokenizer":
        steps = [normalizers.Lowercase()] if lowercase else []
        steps += [normalizers.Strip(), *precompiled, normalizers.Replace(Regex(" {2,}"), " ")]
    else:
        steps = [
            *precompiled,
            normalizers.Strip(left=False, right=True),
            normalizers.Replace(Regex(" {2,}"), SPIECE_UNDERLINE),
        ]
    return normalizers.Sequence(steps)


def _prepend_scheme(cls: TokenizerClass, tok_config: dict) -> str:
    """transformers' ``_get_prepend_scheme``: only T5 has ``add_prefix_space`` and ``legacy``."""
    if cls.name not in ("T5Tokenizer", "MT5Tokenizer"):
        return "always"
    if not tok_config.get("add_prefix_space", True):
        return "never"
    return "first" if tok_config.get("legacy", True) is False else "always"


def _class_tokens(cls: TokenizerClass, sentinels: int) -> dict[str, AddedToken]:
    """Tokens the fast class adds in its ``__init__`` (the saved files override their flags):
    the mask token with ``lstrip``, mBART's language codes, T5's sentinels."""
    extra: dict[str, AddedToken] = {}
    masks = {
        "AlbertTokenizer": "[MASK]",
        "BigBirdTokenizer": "[MASK]",
        "XLNetTokenizer": "<mask>",
        "MBartTokenizer": "<mask>",
        "MBart50Tokenizer": "<mask>",
    }
    if cls.name in masks:
        extra[masks[cls.name]] = AddedToken(masks[cls.name], lstrip=True)
    extra.update({code: AddedToken(code) for code in cls.language_codes})
    if cls.name in ("T5Tokenizer", "MT5Tokenizer"):
        extra.update({f"<extra_id_{i}>": AddedToken(f"<extra_id_{i}>") for i in range(sentinels)})
    return extra


def sentencepiece_fast_tokenizer(
    model_file: Path,
    model_dir: Path,
    tok_config: dict,
    special_map: dict,
    cls: TokenizerClass,
    sentinels: int,
) -> Tokenizer:
    """The fast tokenizer transformers 4.57 converts ``cls``'s slow tokenizer to.

    Parameters
    ----------
    model_file : Path
        The SentencePiece model (``spiece.model``, ``spm.model``, ``sentencepiece.bpe.model``).
    model_dir : Path
        The checkpoint directory (for ``added_tokens.json``).
    tok_config, special_map : dict
        ``tokenizer_config.json`` (with the class's defaults) and ``special_tokens_map.json``.
    cls : TokenizerClass
        The slow class; one of :data:`CONVERTED_CLASSES`.
    sentinels : int
        T5's ``extra_ids`` (0 for the other classes).

    Returns
    -------
    tokenizers.Tokenizer
        Without a post-processor: the caller puts the special tokens around a text.

    Examples
    --------
    >>> from pathlib import Path
    >>> from rust_bertscore.errors import InputValueError
    >>> from rust_bertscore.stages.tokenization.classes import TOKENIZER_CLASSES
    >>> gemma = TOKENIZER_CLASSES["GemmaTokenizer"]
    >>> try:
    ...     sentencepiece_fast_tokenizer(Path("tokenizer.model"), Path("."), {}, {}, gemma, 0)
    ... except InputValueError as e:
    ...     print("is not supported" in str(e))
    True
    """
    if cls.name not in CONVERTED_CLASSES:
        raise InputValueError(
            f"use_fast_tokenizer=True: {model_dir} has no tokenizer.json and building a fast "
            f"{cls.name} from {model_file.name} is not supported; leave use_fast_tokenizer=False"
        )
    proto = read_model_proto(model_file)
    trainer = proto.trainer_spec  # type: ignore[attr-defined]
    if trainer.model_type != _UNIGRAM:
        raise InputValueError(
            f"use_fast_tokenizer=True: {model_file} is not a Unigram SentencePiece model "
            f"(model_type {trainer.model_type}); only Unigram models are converted to a fast "
            "tokenizer here; leave use_fast_tokenizer=False"
        )
    unk_id = int(trainer.unk_id)
    if cls.name in ("MBartTokenizer", "MBart50Tokenizer"):
        unk_id = 3
    elif cls.name == "PegasusTokenizer":
        unk_id += pegasus_offset(tok_config)
    vocab = _vocab(proto, cls, sentinels, tok_config)
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    pieces = proto.pieces  # type: ignore[attr-defined]
    from_model = [p for p in pieces if p.type in (_CONTROL, _USER_DEFINED)]
    tokenizer.add_tokens(
        [RustAddedToken(p.piece, normalized=False, special=p.type == _CONTROL) for p in from_model]
    )
    tokenizer.normalizer = _normalizer(proto, cls, tok_config)
    metaspace = pre_tokenizers.Metaspace(
        replacement=SPIECE_UNDERLINE, prepend_scheme=_prepend_scheme(cls, tok_config)
    )
    if cls.name == "DebertaV2Tokenizer":
        steps = [pre_tokenizers.Punctuation(behavior="isolated")]
        steps = steps if tok_config.get("split_by_punct", False) else []
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([*steps, metaspace])
    elif cls.name == "PegasusTokenizer":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.WhitespaceSplit(), metaspace]
        )
    else:
        tokenizer.pre_tokenizer = metaspace
    tokenizer.decoder = decoders.Metaspace(
        replacement=SPIECE_UNDERLINE, prepend_scheme=_prepend_scheme(cls, tok_config)
    )
    added = collect_added_tokens(model_dir, tok_config, special_map, _class_tokens(cls, sentinels))
    # A piece added above stays matched in the raw text: tokenizers 0.22 (transformers 4.57's)
    # keeps the first ``normalized`` of a token added again, whatever the files say later.
    raw = {p.piece for p in from_model}
    size = tokenizer.get_vocab_size(with_added_tokens=False)
    ordered = sorted(added.values(), key=lambda t: (t.id is None, t.id or 0))
    # one call (the library rebuilds its matcher per call: 15,000 tokens one by one took 70 s);
    # each token keeps its own ``special`` flag
    tokenizer.add_tokens(
        [
            RustAddedToken(
                t.content,
                lstrip=t.lstrip,
                rstrip=t.rstrip,
                normalized=t.normalized and t.content not in raw,
                special=t.special,
            )
            for t in ordered
        ]
    )
    for token in ordered:
        got = tokenizer.token_to_id(token.content)
        # past the model's pieces transformers' conversion appends, whatever id was saved
        if token.id is not None and got != token.id and token.id < size:
            raise InputValueError(
                f"{token.content[:60]!r} gets id {got} from {model_file.name} but {token.id} "
                f"from the tokenizer's saved configuration in {model_dir}: the tokenizer files "
                "do not agree"
            )
    return tokenizer
