"""How a checkpoint's added tokens get their ids in a ``tokenizers.Tokenizer``, as transformers
4.57 numbers them: the slow classes keep ``added_tokens_decoder``'s saved ids (past the
vocabulary too), a fast tokenizer converted from the vocabulary files or loaded from
``tokenizer.json`` appends the ones it lacks at the next free ids."""

from __future__ import annotations

import json

from tokenizers import Tokenizer

from ...errors import InputValueError
from .added_tokens import AddedToken

__all__ = ["add_missing_tokens", "add_special_tokens", "place_past_vocabulary"]


def add_special_tokens(
    tokenizer: Tokenizer, added: dict[str, AddedToken], *, saved_ids: bool = True
) -> None:
    """Keep the checkpoint's added tokens whole, with the ids transformers gives them.

    A token the vocabulary files hold keeps their id. One they lack, saved with an id past the
    vocabulary (``added_tokens_decoder``'s ``"1507"`` beside 1,500 lines of ``vocab.txt``, a
    model whose embedding table is larger than its vocabulary), gets that saved id from a slow
    class (``saved_ids``: transformers' slow tokenizer keeps ``added_tokens_decoder``'s ids) and
    the next free id from a fast one converted from the vocabulary files (transformers appends
    them: 1,500). A saved id that another token of the vocabulary holds is refused
    (InputValueError): the files do not agree.
    """
    from tokenizers import AddedToken as RustAddedToken

    size = tokenizer.get_vocab_size(with_added_tokens=False)
    # an empty token matches nothing (the library ignores it; transformers never splits at it)
    by_id = sorted(
        (t for t in added.values() if t.content), key=lambda t: (t.id is None, t.id or 0)
    )
    if saved_ids:
        place_past_vocabulary(
            tokenizer,
            {
                t.content: t.id
                for t in by_id
                if t.id is not None and t.id >= size and tokenizer.token_to_id(t.content) is None
            },
        )
    # one call: the library rebuilds its matcher per call (15,000 tokens one by one took 72 s)
    tokenizer.add_special_tokens(
        [
            RustAddedToken(t.content, lstrip=t.lstrip, rstrip=t.rstrip, normalized=False)
            for t in by_id
        ]
    )
    for token in by_id:
        got = tokenizer.token_to_id(token.content)
        if token.id is not None and got != token.id and (saved_ids or token.id < size):
            raise InputValueError(
                f"{token.content[:60]!r} gets id {got} from the vocabulary files but {token.id} "
                "from the tokenizer's saved configuration: the tokenizer files do not agree"
            )


def add_missing_tokens(tokenizer: Tokenizer, added: dict[str, AddedToken]) -> None:
    """Append the added tokens ``tokenizer.json`` lacks, as ``PreTrainedTokenizerFast``'s
    constructor does in transformers 4.57: the tokens of ``added_tokens_decoder`` (or, in the
    legacy layout, of ``added_tokens.json``) and the named special tokens it does not hold get
    the next free ids, whatever id the files saved for them, with their own ``special`` and
    ``normalized`` flags; the tokens it holds keep its ids."""
    from tokenizers import AddedToken as RustAddedToken

    have = tokenizer.get_vocab(with_added_tokens=True)
    missing = [
        RustAddedToken(
            t.content, lstrip=t.lstrip, rstrip=t.rstrip, normalized=t.normalized, special=t.special
        )
        for t in sorted(added.values(), key=lambda t: (t.id is None, t.id or 0))
        if t.content and t.content not in have
    ]
    if missing:
        tokenizer.add_tokens(missing)  # one call (see add_special_tokens)


def place_past_vocabulary(tokenizer: Tokenizer, wanted: dict[str, int]) -> None:
    """Put each token of ``wanted`` into the model's vocabulary at its id (past the vocabulary:
    ids between stay unused), so that adding it as a special token keeps that id, as
    transformers' slow tokenizer numbers ``added_tokens_decoder``. The model is rebuilt from its
    own serialisation, with the entries added; a model whose vocabulary is not a table of ids
    (a Unigram list) cannot have gaps: InputValueError."""
    if not wanted:
        return
    state = json.loads(tokenizer.to_str())
    vocab = state.get("model", {}).get("vocab")
    if not isinstance(vocab, dict):
        raise InputValueError(
            f"added tokens numbered past the vocabulary ({sorted(wanted.values())[:4]}) need a "
            f"vocabulary of ids, not a {state.get('model', {}).get('type')} model's"
        )
    taken = set(vocab.values())
    for content, token_id in sorted(wanted.items(), key=lambda item: item[1]):
        if token_id in taken:
            raise InputValueError(
                f"added tokens {content[:60]!r} and another share id {token_id} in the tokenizer's "
                "saved configuration: the tokenizer files do not agree"
            )
        vocab[content] = token_id
        taken.add(token_id)
    rebuilt = Tokenizer.from_str(json.dumps(state))
    tokenizer.model = rebuilt.model
