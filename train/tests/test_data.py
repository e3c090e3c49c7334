"""Data and tokenizer round trips: any text through the byte-level BPE and back; passages
through token files and back; the corpus cleaning of data.py."""

import gzip
import io
import struct
import tarfile
import zlib

import numpy as np
import pytest

import data
import rdata
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


# -- the v2 sources' extraction (issue 10), on hand-made inputs ----------------------------

def _xdr_int(v):
    return struct.pack(">i", v)


def _charsxp(s):
    if s is None:
        return _xdr_int(9) + _xdr_int(-1)
    b = s.encode()
    return _xdr_int(9 | (1 << 15)) + _xdr_int(len(b)) + b  # UTF-8 flagged, as R writes it


def _strsxp(items):
    return _xdr_int(16) + _xdr_int(len(items)) + b"".join(_charsxp(s) for s in items)


def _serialize(body):
    return b"X\n" + _xdr_int(2) + _xdr_int(0x040201) + _xdr_int(0x020300) + body


def test_rdata_reads_a_lazyload_data_base():
    """A lazy-load data base as R writes one: objects serialized and zlib-compressed behind
    a 4-byte length, and a gzipped index (a named list: variables → offset, length)."""
    obj = _serialize(_strsxp(["EMMA", "", None, "naïve"]))
    blob = struct.pack(">I", len(obj)) + zlib.compress(obj)
    # index: list(variables = list(emma = c(0, len)), references = list(), compressed = TRUE)
    named = lambda items, names: (_xdr_int(19 | (1 << 9)) + _xdr_int(len(items)) + b"".join(items)  # noqa: E731
                                  + _xdr_int(2 | (1 << 10)) + _xdr_int(1) + _charsxp("names")
                                  + _strsxp(names) + _xdr_int(254))
    real = _xdr_int(14) + _xdr_int(2) + struct.pack(">2d", 0, len(blob))
    index = _serialize(named([named([real], ["emma"])], ["variables"]))
    out = rdata.lazyload(blob, gzip.compress(index))
    assert out == {"emma": ["EMMA", "", None, "naïve"]}


def test_deb_files_reads_data_tar_without_dpkg(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, body in (("./usr/share/a.txt", b"hello"), ("./usr/share/b.bin", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    members = [(b"debian-binary", b"2.0\n"), (b"control.tar.xz", b"\0" * 3), (b"data.tar.xz", buf.getvalue())]
    raw = b"!<arch>\n"
    for name, body in members:
        raw += name.ljust(16) + b"0".ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"100644".ljust(8) \
            + str(len(body)).encode().ljust(10) + b"`\n" + body + (b"\n" if len(body) % 2 else b"")
    (tmp_path / "p.deb").write_bytes(raw)
    assert data.deb_files(tmp_path / "p.deb", lambda n: n.endswith(".txt")) == {"usr/share/a.txt": b"hello"}


GCIDE_LOVE = """Love \\Love\\ (l[u^]v), n. [OE. love, luve, AS. lufe, lufu; akin
   to E. lief. See {Lief}.]
   1. A feeling of strong attachment; pre["e]minent kindness or
      devotion to another; as, the love of brothers and sisters.
      [1913 Webster]

            He on his side
            Leaning half-raised, with looks of cordial love
            Hung over her enamored.               --Milton.
      [1913 Webster]

   2. Courtship; -- chiefly in the phrase to make love. [Obs.]
      "Trust me, love." --Dryden.
      [1913 Webster]
"""


def test_gcide_entry_is_prose_without_markup_or_quotations():
    assert data.gcide_entry(GCIDE_LOVE) == (
        "Love, n. 1. A feeling of strong attachment; preeminent kindness or devotion to another; "
        "as, the love of brothers and sisters. 2. Courtship; -- chiefly in the phrase to make love. "
        "\"Trust me, love.\"")


def test_dict_paragraphs_keep_verse_and_unwrap_prose():
    entry = ("ADMONITION, n.  Gentle reproof, as with a meat-axe.\nFriendly warning.\n\n"
             "    Consigned by way of admonition,\n    His soul forever to perdition.\n\n")
    assert data.dict_paragraphs(entry, 0) == ("ADMONITION, n. Gentle reproof, as with a meat-axe. Friendly warning.\n"
                                              "Consigned by way of admonition,\nHis soul forever to perdition.")


RST = """===================
How to use sessions
===================

.. module:: django.contrib.sessions
   :synopsis: Provides session management.

Sessions are implemented via a piece of :doc:`middleware </ref/middleware>`
and the :class:`~django.contrib.sessions.models.Session` model. Use ``request.session``::

    request.session["fav_color"] = "blue"

.. code-block:: python

    def view(request):
        return 1

.. note::

    Cookies contain a session ID -- not the data itself.

>>> print(1)
1

* Edit the :setting:`MIDDLEWARE` setting
  and make sure it contains the middleware.
"""


def test_rst_paragraphs_keep_the_prose():
    assert data.rst_paragraphs(RST) == [
        "How to use sessions",
        "Sessions are implemented via a piece of middleware and the Session model. Use request.session:",
        "Cookies contain a session ID -- not the data itself.",
        "* Edit the MIDDLEWARE setting and make sure it contains the middleware.",
    ]


def test_sotu_sentences_split_at_sentence_ends_only():
    text = "Mr. Speaker, the U. S. Army is strong. We stand. \"Why?\" Because we must (Sec. 4). No."
    sents = data.split_sentences(text)
    assert sents == ["Mr. Speaker, the U. S. Army is strong.", "We stand.", "\"Why?\"", "Because we must (Sec. 4).", "No."]
    assert " ".join(sents) == text
    assert data.gutenberg_body("\ufeffhead\r\n*** START OF THIS EBOOK ***\r\nbody\r\n*** END OF IT ***\r\nfoot") == "\nbody\n"
