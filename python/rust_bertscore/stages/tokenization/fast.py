"""The Rust ``tokenizers`` back end of ``TextTokenizer``: ``tokenizer.json``, or WordPiece from
``vocab.txt``, or byte-level BPE from ``vocab.json`` + ``merges.txt``, set up so that special
tokens, truncation and the prefix space are left to the caller (as bert_score's slow tokenizers
place them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from ...errors import InputValueError, ModelNotFoundError
from ...support.boundary import KEEP, foreign_call, library_path
from ...support.inputs import MAX_TOKENIZER_BYTES, read_bytes
from .added_ids import add_missing_tokens, add_special_tokens
from .added_tokens import collect_added_tokens
from .classes import TokenizerClass
from .programs import check_tokenizer, check_tokenizer_json_charsmaps
from .sentencepiece_fast import sentencepiece_fast_tokenizer

SERIAL_TEXTS = 8
"""Batches of at most this many texts are tokenised one by one on the calling thread: handing
a few short texts to the ``tokenizers`` thread pool costs more than it saves (most of a one-pair
call's tokenising time, and milliseconds when other processes keep the cores busy)."""
SERIAL_CHARS = 64 * 1024
"""Texts longer than this in all go to the library's batch call even when few: it releases the
GIL while it works (its single-text call does not), so other threads (a server's event loop)
run meanwhile."""


def entry_text(entry: object) -> str | None:
    """A token of a tokenizer configuration: a string, or ``{"content": string, ...}``."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("content"), str):
        return entry["content"]
    return None


class FastIds:
    """The Rust ``tokenizers`` back end, special tokens and truncation left to the caller.

    Whatever the library raises on a text (a plain ``Exception``, or a Rust panic: a
    ``BaseException``), ``encode_batch`` raises ``InputValueError`` naming the text and
    ``source`` (the tokenizer's folder). A tokenizer whose patterns could take unbounded time
    on a text is refused here, before any text meets it (:mod:`.programs`)."""

    def __init__(self, tokenizer: Tokenizer, source: str = "the tokenizer") -> None:
        check_tokenizer(tokenizer, source)
        self.tokenizer = tokenizer
        self.source = source
        tokenizer.no_padding()
        tokenizer.no_truncation()
        # One past the largest id: added tokens may sit past the vocabulary, with ids between
        # unused (add_special_tokens), where the count of tokens would be smaller.
        count = int(tokenizer.get_vocab_size(with_added_tokens=True))
        added_ids = tokenizer.get_added_tokens_decoder()
        self.vocab_size = max(count, max(added_ids, default=-1) + 1)
        model_count = int(tokenizer.get_vocab_size(with_added_tokens=False))
        # the vocabulary files' own tokens: not those placed past them (place_past_vocabulary)
        placed = [
            i for i in added_ids if i >= model_count and tokenizer.model.id_to_token(i) is not None
        ]
        self.base_vocab_size = model_count - len(placed)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        try:
            if len(texts) <= SERIAL_TEXTS and sum(map(len, texts)) <= SERIAL_CHARS:  # no hand-off
                return [self.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
            encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        except KEEP:
            raise
        except BaseException as first:  # a plain Exception or a panic: name the text
            for i, text in enumerate(texts):
                with foreign_call(
                    f"{self.source} cannot encode text {i} ({text[:40]!r})", InputValueError
                ):
                    self.tokenizer.encode(text, add_special_tokens=False)
            raise InputValueError(f"{self.source} cannot encode these texts: {first}") from first
        return [list(e.ids) for e in encodings]

    def token_to_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self.tokenizer.id_to_token(token_id)


def read_tokenizer_json(path: Path) -> Tokenizer:
    """``path`` (a ``tokenizer.json``) as a ``tokenizers.Tokenizer``; InputValueError naming the
    file when the library cannot read it."""
    data = read_bytes(path, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError)  # read once
    check_tokenizer_json_charsmaps(data, str(path))
    # a plain Exception, a panic, or bytes that are not UTF-8
    with foreign_call(f"cannot load {path}", InputValueError):
        return Tokenizer.from_str(data.decode("utf-8"))


def load_fast_tokenizer(
    model_dir: Path, tok_config: dict, special_map: dict, cls: TokenizerClass
) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` of ``model_dir``: its ``tokenizer.json``, else one built
    from its vocabulary files; FileNotFoundError naming what it expected when there is none."""
    if cls.name == "Qwen2Tokenizer":
        qwen2 = qwen2_tokenizer(model_dir)
        if qwen2 is not None:
            add_special_tokens(qwen2, collect_added_tokens(model_dir, tok_config, special_map, {}))
            return qwen2
    # A slow class reads its vocabulary files (vocab.txt, or vocab.json + merges.txt), as
    # transformers' slow tokenizer does, tokenizer.json only without them; a checkpoint of
    # PreTrainedTokenizerFast has no slow files to read.
    if cls.name != "PreTrainedTokenizerFast":
        from_vocab = from_vocabulary_files(model_dir, tok_config)
        if from_vocab is not None:
            added = collect_added_tokens(model_dir, tok_config, special_map, {})
            add_special_tokens(from_vocab, added)
            wordpiece_unknown_as_added_token(from_vocab)
            return from_vocab
    tokenizer_json = model_dir / "tokenizer.json"
    if tokenizer_json.is_file():
        tokenizer = read_tokenizer_json(tokenizer_json)
        no_dropout(tokenizer)
        no_builtin_prefix_space(tokenizer)
        wordpiece_unknown_as_added_token(tokenizer)
        wordpiece_case_from_config(tokenizer, tok_config)
        add_missing_tokens(tokenizer, collect_added_tokens(model_dir, tok_config, special_map, {}))
        return tokenizer
    wanted = "tokenizer.json, vocab.txt, or vocab.json with merges.txt"
    if cls.model_files:
        wanted = f"{' or '.join(cls.model_files)} ({cls.name}), or {wanted}"
    raise ModelNotFoundError(f"no tokenizer in {model_dir}: expected {wanted}")


def no_dropout(tokenizer: Tokenizer) -> None:
    """A BPE model's ``dropout`` off: a training-time augmentation that bert_score's slow
    tokenizers do not have; left on (as a fast tokenizer of transformers would), the same
    texts got other tokens, and other scores, on each call. A metric is deterministic."""
    if getattr(tokenizer.model, "dropout", None):
        tokenizer.model.dropout = None


SLOW_ONLY_CLASSES = frozenset(
    {
        "ByT5Tokenizer",
        "BertweetTokenizer",
        "XLMTokenizer",
        "ProphetNetTokenizer",
        "XLMProphetNetTokenizer",
    }
)
"""Tokenizer classes that transformers 4.57 has no fast version of: ``AutoTokenizer`` with
``use_fast=True`` returns the slow tokenizer, so bert_score's fast path is its slow path."""

NO_FAST_CLASSES = frozenset({"BlenderbotSmallTokenizer"})
"""Classes whose fast tokenizer is not built here: transformers 4.57's
``BlenderbotSmallTokenizerFast`` reads the vocabulary as character BPE with ``</w>`` and could
not load the reference set's BlenderbotSmall checkpoint (``Token `e</w>` out of vocabulary``),
so bert_score's fast path fails there too."""

BYTE_LEVEL_FAST_CLASSES = frozenset(
    {
        "RobertaTokenizer",
        "GPT2Tokenizer",
        "BartTokenizer",
        "DebertaTokenizer",
        "LongformerTokenizer",
        "LEDTokenizer",
        "BlenderbotTokenizer",
    }
)
"""Classes whose fast version sets its byte-level ``add_prefix_space`` from its configuration
(``tokenizer_config.json``'s ``add_prefix_space``, default False) when it loads."""


def load_use_fast_tokenizer(
    model_dir: Path, tok_config: dict, special_map: dict, cls: TokenizerClass, sentinels: int = 0
) -> Tokenizer:
    """The tokenizer bert_score gets with ``use_fast_tokenizer=True``: the model's fast
    tokenizer (``tokenizer.json``, or one built from ``vocab.txt`` / ``vocab.json`` +
    ``merges.txt`` or from a SentencePiece model as transformers converts them), as
    ``PreTrainedTokenizerFast`` loads it.

    bert_score passes no ``add_prefix_space`` to a fast tokenizer (its ``sent_encode`` tests for
    the slow RoBERTa/GPT-2 classes), so a byte-level tokenizer adds a space before the text only
    when its configuration says so. A SentencePiece checkpoint without ``tokenizer.json`` gets
    the tokenizer transformers 4.57 converts its slow one to (:mod:`.sentencepiece_fast`;
    ``sentinels`` is T5's ``extra_ids``). ``InputValueError`` for a class whose fast tokenizer
    is not built here (:data:`NO_FAST_CLASSES`, a SentencePiece class without a converter
    here) and for the classes of :data:`SLOW_ONLY_CLASSES`, for which bert_score's fast path
    is the slow tokenizer (the caller loads that instead).

    A WordPiece vocabulary without its unknown token is left as it is: the fast tokenizer then
    fails on a word it cannot split, as bert_score's does (:class:`FastIds` names the text).
    """
    if cls.name in NO_FAST_CLASSES or cls.name in SLOW_ONLY_CLASSES:
        raise InputValueError(
            f"use_fast_tokenizer=True: {cls.name} (the tokenizer of {model_dir}) has no fast "
            "tokenizer that this package builds; leave use_fast_tokenizer=False (its slow "
            "tokenizer, bert_score's default)"
        )
    tokenizer_json = model_dir / "tokenizer.json"
    if tokenizer_json.is_file():
        tokenizer = read_tokenizer_json(tokenizer_json)
        no_dropout(tokenizer)
        wordpiece_case_from_config(tokenizer, tok_config)
        add_missing_tokens(tokenizer, collect_added_tokens(model_dir, tok_config, special_map, {}))
    elif cls.sentencepiece is not None:
        found = [model_dir / n for n in cls.model_files if (model_dir / n).is_file()]
        if not found:
            raise ModelNotFoundError(
                f"no fast tokenizer in {model_dir}: use_fast_tokenizer=True expected "
                f"tokenizer.json or {' or '.join(cls.model_files)} ({cls.name})"
            )
        tokenizer = sentencepiece_fast_tokenizer(
            found[0], model_dir, tok_config, special_map, cls, sentinels
        )
    else:
        built = from_vocabulary_files(model_dir, tok_config)
        if built is None:
            raise ModelNotFoundError(
                f"no fast tokenizer in {model_dir}: use_fast_tokenizer=True expected "
                "tokenizer.json, vocab.txt, or vocab.json with merges.txt"
            )
        added = collect_added_tokens(model_dir, tok_config, special_map, {})
        add_special_tokens(built, added, saved_ids=False)  # transformers' conversion appends
        tokenizer = built
    pre = tokenizer.pre_tokenizer
    byte_level = pre is not None and type(pre).__name__ == "ByteLevel"
    if cls.name in BYTE_LEVEL_FAST_CLASSES and byte_level:
        pre.add_prefix_space = bool(tok_config.get("add_prefix_space", False))
    return tokenizer


def read_bpe_files(vocab_json: Path, merges: Path) -> tuple[dict, list]:
    """The vocabulary and merges of a BPE model's ``vocab.json`` and ``merges.txt``, through the
    boundary (InputValueError naming the files)."""
    from tokenizers import models

    with (
        library_path(vocab_json, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError) as vocab,
        library_path(merges, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError) as merged,
        foreign_call(f"cannot load {vocab_json} and {merges}", InputValueError),
    ):
        return models.BPE.read_file(vocab, merged)


def strip_accents_of(tok_config: dict) -> bool | None:
    """``tokenizer_config.json``'s ``strip_accents`` (None: as ``do_lower_case``);
    InputValueError naming it for anything but true, false or null."""
    strip_accents = tok_config.get("strip_accents")
    if strip_accents is not None and not isinstance(strip_accents, bool):
        raise InputValueError(
            f"tokenizer_config.json strip_accents must be true, false or null, got "
            f"{strip_accents!r:.40}"
        )
    return strip_accents


def from_vocabulary_files(model_dir: Path, tok_config: dict) -> Tokenizer | None:
    """WordPiece from ``vocab.txt`` or byte-level BPE from ``vocab.json`` + ``merges.txt``."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    vocab_txt = model_dir / "vocab.txt"
    if not vocab_txt.is_file():  # ProphetNetTokenizer's WordPiece vocabulary
        vocab_txt = model_dir / "prophetnet.tokenizer"
    if vocab_txt.is_file():
        unk = entry_text(tok_config.get("unk_token")) or "[UNK]"
        with (
            library_path(vocab_txt, max_bytes=MAX_TOKENIZER_BYTES, error=InputValueError) as name,
            foreign_call(f"cannot load {vocab_txt}", InputValueError),
        ):
            vocab_table = models.WordPiece.read_file(name)
        tokenizer = Tokenizer(models.WordPiece(vocab_table, unk_token=unk))
        tokenizer.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=bool(tok_config.get("tokenize_chinese_chars", True)),
            strip_accents=strip_accents_of(tok_config),
            lowercase=bool(tok_config.get("do_lower_case", True)),
        )
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece(prefix="##")  # as transformers' BertConverter
        return tokenizer
    vocab_json, merges = model_dir / "vocab.json", model_dir / "merges.txt"
    if not (vocab_json.is_file() and merges.is_file()):
        return None
    # GPT-2's byte-level BPE, as tokenizers' ByteLevelBPETokenizer(vocab, merges) builds it.
    from tokenizers import processors

    vocab, merge_list = read_bpe_files(vocab_json, merges)
    with foreign_call(f"cannot load {vocab_json} and {merges}", InputValueError):
        bpe = models.BPE(vocab, merge_list, continuing_subword_prefix="", end_of_word_suffix="")
    tokenizer = Tokenizer(bpe)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return tokenizer


QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)
"""``Qwen2Tokenizer``'s pre-tokenisation pattern (transformers' ``PRETOKENIZE_REGEX``)."""


def qwen2_tokenizer(model_dir: Path) -> Tokenizer | None:
    """``Qwen2Tokenizer`` (the slow class bert_score loads) from ``vocab.json`` + ``merges.txt``:
    NFC, then words by :data:`QWEN2_PATTERN`, then GPT-2's byte-level BPE; None without those
    files (the caller then reads ``tokenizer.json``, which the published Qwen3 models' is).

    A ``tokenizer.json`` trained with GPT-2's pattern (as the reference set's tiny Qwen3) would
    split digits and punctuation otherwise, so the vocabulary files come first.
    """
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    vocab_json, merges = model_dir / "vocab.json", model_dir / "merges.txt"
    if not (vocab_json.is_file() and merges.is_file()):
        return None
    vocab, merge_list = read_bpe_files(vocab_json, merges)
    with foreign_call(f"cannot load {vocab_json} and {merges}", InputValueError):
        tokenizer = Tokenizer(
            models.BPE(vocab, merge_list, continuing_subword_prefix="", end_of_word_suffix="")
        )
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def no_builtin_prefix_space(tokenizer: Tokenizer) -> None:
    """Turn off a byte-level pre-tokenizer's own prefix space: :func:`prepare_text` adds it
    exactly when bert_score does."""
    pre = tokenizer.pre_tokenizer
    if pre is not None and type(pre).__name__ == "ByteLevel" and pre.add_prefix_space:
        pre.add_prefix_space = False


def wordpiece_case_from_config(tokenizer: Tokenizer, tok_config: dict) -> None:
    """Give a ``BertNormalizer`` the case and accent settings of ``tokenizer_config.json``.

    transformers' BERT-style tokenizers (``BertTokenizer`` and its kin: DistilBERT, ELECTRA,
    MPNet, ConvBERT, ...) take ``do_lower_case`` (default true), ``strip_accents`` and
    ``tokenize_chinese_chars`` from ``tokenizer_config.json``: the slow class uses them as they
    are, and the fast class rebuilds the ``tokenizer.json`` normaliser with them when they
    differ. So where the two files disagree, the configuration decides, in both modes.

    Examples
    --------
    >>> import json
    >>> from tokenizers import Tokenizer, models, normalizers
    >>> from rust_bertscore.stages.tokenization.fast import wordpiece_case_from_config
    >>> tok = Tokenizer(models.WordPiece({"[UNK]": 0}, unk_token="[UNK]"))
    >>> tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    >>> wordpiece_case_from_config(tok, {"do_lower_case": False})
    >>> json.loads(tok.normalizer.__getstate__())["lowercase"]
    False
    """
    from tokenizers import normalizers

    normalizer = tokenizer.normalizer
    if normalizer is None or type(normalizer).__name__ != "BertNormalizer":
        return
    state = json.loads(normalizer.__getstate__())
    lowercase = bool(tok_config.get("do_lower_case", True))
    strip_accents = strip_accents_of(tok_config)
    chinese = bool(tok_config.get("tokenize_chinese_chars", True))
    wanted = {
        "lowercase": lowercase,
        "strip_accents": strip_accents,
        "handle_chinese_chars": chinese,
    }
    if all(state.get(key, value) == value for key, value in wanted.items()):
        return
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=bool(state.get("clean_text", True)),
        handle_chinese_chars=chinese,
        strip_accents=strip_accents,
        lowercase=lowercase,
    )


def wordpiece_unknown_as_added_token(tokenizer: Tokenizer) -> None:
    """Give a WordPiece model its unknown token when only the added tokens hold it.

    A slow tokenizer maps the ``[UNK]`` it emits through the added tokens too (MPNet checkpoints
    may keep ``[UNK]`` in ``added_tokens.json`` only); the Rust WordPiece model fails on a word
    it cannot split unless its own vocabulary has the unknown token.
    """
    from tokenizers import models

    model = tokenizer.model
    if not isinstance(model, models.WordPiece):
        return
    unk = model.unk_token
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    added_id = tokenizer.token_to_id(unk)
    if unk in vocab or added_id is None:
        return
    vocab[unk] = added_id
    tokenizer.model = models.WordPiece(
        vocab,
        unk_token=unk,
        max_input_chars_per_word=model.max_input_chars_per_word,
        continuing_subword_prefix=model.continuing_subword_prefix,
    )


TEMPLATE_REBUILT_CLASSES = frozenset(
    {"GemmaTokenizer", "LlamaTokenizer", "MBartTokenizer", "MBart50Tokenizer"}
)
"""Classes whose fast tokenizer replaces ``tokenizer.json``'s post-processor when it loads
(transformers 4.57's ``update_post_processor`` and the language-code templates): their frame
is the class's own, not the file's."""


def template_frame(tokenizer: Tokenizer) -> tuple[list[int], list[int]] | None:
    """The special ids ``tokenizer``'s post-processor puts before and after one text (what
    transformers' fast tokenizer adds with ``add_special_tokens=True``), found by
    post-processing a probe; None without a post-processor or when the probe does not show
    them (no token for it, or its ids not kept together).

    >>> from rust_bertscore import BERTScorer
    >>> tok = BERTScorer(use_fast_tokenizer=True).tokenizer
    >>> template_frame(tok._tokenizer)
    ([101], [102])
    """
    if tokenizer.post_processor is None:
        return None
    with foreign_call("the tokenizer's post-processor", InputValueError):
        probe = tokenizer.encode("a", add_special_tokens=False)
        if not probe.ids:
            return None
        framed = tokenizer.post_process(probe, None, True)
    content = [i for i, special in enumerate(framed.special_tokens_mask) if not special]
    if not content or content != list(range(content[0], content[0] + len(probe.ids))):
        return None
    ids = list(framed.ids)
    return ids[: content[0]], ids[content[-1] + 1 :]
