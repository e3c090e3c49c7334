"""Bits per byte: the byte lengths of token ids, the windows `dory ppl` cuts, and the
score against hand-computed values (a stub model whose probabilities are known)."""

import json
import math

import numpy as np
import pytest
import torch

from dory import perplexity
from dory import tokenizer as toks

TEXT = "naïve café — 東京 🦊 The quick brown fox.\n\nÆsop's fables, ½ price!\t\r\n" * 3


@pytest.fixture(scope="module")
def tokfile(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    toks.train([TEXT * 5], 300).save(str(path))
    return path


def test_token_bytes_add_up_to_the_text(tokfile):
    tok = toks.load(tokfile)
    nb = perplexity.token_bytes(tokfile)
    assert len(nb) == 300
    assert nb[0] == nb[1] == 0  # <|bos|>, <|eos|>
    for text in (TEXT, "🦊", "東京", "a", " x\n"):
        ids = toks.encode(tok, text)
        assert nb[ids].sum() == len(text.encode("utf-8")), text
    # Every non-special id is its own bytes: the byte tokens are 1, merges add up.
    for i in range(2, 300):
        assert nb[i] == len(tok.decode([i]).encode("utf-8")) or "\ufffd" in tok.decode([i])


def test_token_bytes_refuses_other_tokenizers(tmp_path):
    (tmp_path / "t.json").write_text(json.dumps({"model": {"vocab": {"a": 0}}, "decoder": {"type": "WordPiece"}}))
    with pytest.raises(ValueError, match="byte-level"):
        perplexity.token_bytes(tmp_path / "t.json")


def test_text_windows_cut_like_dory_ppl():
    ids = np.arange(2, 12)  # 10 text tokens
    full, rest = perplexity.text_windows(ids, 0, 4)
    assert full.tolist() == [[0, 2, 3, 4], [0, 5, 6, 7], [0, 8, 9, 10]]
    assert rest.tolist() == [[0, 11]]
    full, rest = perplexity.text_windows(ids, None, 4)
    assert full.tolist() == [[2, 3, 4, 5], [6, 7, 8, 9]] and rest.tolist() == [[10, 11]]
    (only,) = perplexity.text_windows(ids[:6], 0, 4)
    assert only.tolist() == [[0, 2, 3, 4], [0, 5, 6, 7]]
    # Every text token is a target exactly once: B is the text's byte count.
    nb = np.array([0, 0] + [1, 2, 3, 4, 1, 1, 1, 1, 1, 1])
    assert sum(perplexity.target_bytes(w, nb) for w in perplexity.text_windows(ids, 0, 4)) == nb[ids].sum()


class Stub:
    """A 'model' over 4 ids with 2 passes whose probabilities are known: after pass 1
    uniform (p = 1/4); after pass 2 logit ln 3 on the right target and 0 elsewhere, so
    p = 3 / (3 + 3) = 1/2. The decode semantics see the same (no dependence on keys)."""

    class cfg:
        passes = 2

    def __init__(self, targets):
        self.targets = targets

    def __call__(self, x, passes=None, readouts=False, final_kv=None):
        # Like Dory.forward: one state per pass (the read-outs); the caller takes [-1].
        return [(k, x.shape) for k in range(1, passes + 1)], "kv"

    def logits(self, state):
        k, shape = state
        out = torch.zeros(*shape, 4, dtype=torch.float64)
        if k == 2:
            out.scatter_(-1, self.targets[:, :shape[1], None], math.log(3))
        return out

    def eval(self):
        pass


def test_score_against_hand_computed_values():
    wins = torch.tensor([[0, 2, 3, 1]])  # bos, two text tokens, eos
    nb = np.array([0, 0, 1, 3])  # specials 0 bytes; id 2 one byte, id 3 three
    model = Stub(wins[:, 1:])
    r = perplexity.score(model, [wins], 8, torch.device("cpu"), nb, iterations=2)
    # 3 targets, B = 1 + 3 + 0 = 4 bytes.
    assert r["tokens"] == 3 and r["bytes"] == 4
    # Pass 1: −ln p = ln 4 = 2 ln 2 per target → bpb = 3 · 2 ln 2 / (ln 2 · 4) = 1.5, ppl 4.
    # Pass 2: −ln p = ln 2 → bpb = 3 ln 2 / (4 ln 2) = 0.75, ppl 2.
    assert r["ppl_per_pass"] == [4.0, 2.0]
    assert r["bpb_per_pass"] == [1.5, 0.75]
    assert r["bpb_decode"] == {1: [1.5, 1.5], 2: [0.75, 0.75]}
    assert r["ppl_decode"] == {1: [4.0, 4.0], 2: [2.0, 2.0]}
    assert perplexity.bits_per_byte(3 * math.log(2), 4) == pytest.approx(0.75)
