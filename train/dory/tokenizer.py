"""The tokenizer: byte-level BPE in the Hugging Face `tokenizers` format (tokenizer.json of
spec §2), with <|bos|> = 0 and <|eos|> = 1 as the fixtures' tokenizers have them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

BOS, EOS = "<|bos|>", "<|eos|>"


def train(texts: Iterable[str], vocab_size: int) -> Tokenizer:
    """A byte-level BPE of `vocab_size` ids (the two specials and all 256 bytes among
    them), so that any UTF-8 text encodes and decodes back exactly."""
    if vocab_size < 258:
        raise ValueError(f"vocab_size must be ≥ 258 (2 specials + 256 bytes), got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    if tok.token_to_id(BOS) != 0 or tok.token_to_id(EOS) != 1:
        raise RuntimeError("the special tokens did not get ids 0 and 1")
    return tok


def load(path: str | Path) -> Tokenizer:
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.exists():
        raise FileNotFoundError(f"{p}: no tokenizer.json")
    return Tokenizer.from_file(str(p))


def encode(tok: Tokenizer, text: str) -> list[int]:
    """Ids of a text without special tokens (spec §5: the caller prepends bos)."""
    return tok.encode(text, add_special_tokens=False).ids


def decode(tok: Tokenizer, ids: list[int]) -> str:
    return tok.decode(ids, skip_special_tokens=False)
