"""Data and tokenizer round trips: any text through the byte-level BPE and back; passages
through token files and back; the corpus cleaning of data.py."""

import numpy as np
import pytest

import data
from dory import tokenizer as toks
from dory import tokens as token_files

SAMPLE = ("Once upon a time there was a little fox. It ran, and ran; then it slept.\n\n"
          "\"Who's there?\" said the old man. Thou art come unto thy years.\n") * 20
ODD = "naïve café — 東京 🦊\ttabs\r\n  spaces  and \u0000 nul"


@pytest.fixture(scope="module")
def tok():
    return toks.train([SAMPLE], 300)


def test_specials_and_size(tok):
    assert tok.token_to_id(toks.BOS) == 0 and tok.token_to_id(toks.EOS) == 1
    assert tok.get_vocab_size() == 300


@pytest.mark.parametrize("text", [SAMPLE, ODD, "", " leading space", "x" * 1000])
def test_tokenizer_round_trip(tok, text):
    assert toks.decode(tok, toks.encode(tok, text)) == text


def test_passages_round_trip_through_token_files(tok, tmp_path):
    ps = data.paragraphs_to_passages("s", "doc", data.split_paragraphs(SAMPLE * 3))
    ids = data.encode_passages(tok, ps)
    for name in ("t.u16", "t.u16.xz"):
        token_files.write(tmp_path / name, ids)
        back = token_files.read(tmp_path / name)
        assert np.array_equal(back, ids)
    # Split at the specials, decode, and get the passages back.
    texts, cur = [], []
    for t in back.tolist():
        if t == 0:
            cur = []
        elif t == 1:
            texts.append(toks.decode(tok, cur))
        else:
            cur.append(t)
    assert texts == [p.text for p in ps]
    assert list(token_files.starts(back, 0, 10)) == [i for i, t in enumerate(back) if t == 0 and i + 10 <= len(back)]


def test_token_files_refuse_out_of_range_ids(tmp_path):
    with pytest.raises(ValueError, match="uint16"):
        token_files.write(tmp_path / "x.u16", np.array([70000]))


def test_passages_group_paragraphs():
    paras = [f"paragraph {i} " + "w" * 700 for i in range(10)]
    ps = data.paragraphs_to_passages("src", "doc", paras)
    assert [p.name for p in ps] == [f"src/doc/{i}" for i in range(len(ps))]
    assert all(len(p.text) >= data.PASSAGE_CHARS for p in ps)
    assert "\n\n".join(p.text for p in ps) == "\n\n".join(paras)


def test_brown_detagging():
    line = "``/`` The/at jury/nn ,/, he/pps said/vbd ,/, was/bedz n't/* 1/2/cd ''/'' (/( sure/jj )/) ./."
    assert data.brown_sentence(line) == '"The jury, he said, was n\'t 1/2" (sure).'


def test_validation_split_is_stable():
    p = data.Passage("kjv/Genesis/3", "")
    assert data.is_val(p) == data.is_val(data.Passage("kjv/Genesis/3", "other text"))
