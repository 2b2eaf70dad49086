"""Reading pairs files: grouping by source, NFC, targets as symbols or characters, and the
errors that name the file and line."""

from __future__ import annotations

import unicodedata

import pytest

from keras_attention.pairs import (
    PairsFileError,
    normalize_source,
    read_pairs,
    read_raw_pairs,
    read_sources,
)


def _write(tmp_path, text, name="pairs.tsv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def test_sources_group_their_references_in_file_order(tmp_path):
    path = _write(tmp_path, "read\tR IY D\nlead\tL IY D\nread\tR EH D\n\nread\tR IY D\n")
    pairs = read_pairs(path)
    assert pairs.sources == ["read", "lead"]
    assert pairs.references == [[("R", "IY", "D"), ("R", "EH", "D")], [("L", "IY", "D")]]
    assert pairs.pairs() == [
        ("read", ("R", "IY", "D")),
        ("read", ("R", "EH", "D")),
        ("lead", ("L", "IY", "D")),
    ]
    assert pairs.lines == 4 and len(pairs) == 2


def test_sources_are_nfc_and_targets_may_be_characters(tmp_path):
    decomposed = "cafe\u0301"  # e + combining acute: NFC makes one code point
    path = _write(tmp_path, f"\ufeff{decomposed}\tk a f e\u0301\n")
    assert read_pairs(path).sources == ["caf\u00e9"]
    assert read_pairs(path).references == [[("k", "a", "f", "\u00e9")]]
    assert read_pairs(path, target_chars=True).references == [[("k", "a", "f", "\u00e9")]]
    path = _write(tmp_path, "ab\txy z\n", name="chars.tsv")
    assert read_pairs(path, target_chars=True).references == [[("x", "y", "z")]]
    assert normalize_source(" a \t b ") == "a b"
    assert unicodedata.is_normalized("NFC", normalize_source(decomposed))


@pytest.mark.parametrize(
    "text, message",
    [
        ("ok\tO K\nno tab here\n", r"pairs\.tsv:2: the line has no tab.*Received: 'no tab here'"),
        ("a\tb\tc\n", r"pairs\.tsv:1: the line has 2 tabs"),
        ("ok\tO K\nword\t  \n", r"pairs\.tsv:2: the target is empty"),
        ("\tX\n", r"pairs\.tsv:1: the source is empty"),
        ("\n\n", r"pairs\.tsv: no `source<TAB>target` line"),
    ],
)
def test_bad_lines_are_refused_naming_file_and_line(tmp_path, text, message):
    with pytest.raises(PairsFileError, match=message):
        read_pairs(_write(tmp_path, text), argument="--train")


def test_raw_pairs_keep_the_text_and_may_ignore_further_columns(tmp_path):
    """Anki's and Tatoeba's exports: `source<TAB>target<TAB>attribution`."""
    text = "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org\n\n cafe\u0301 \t Un  café \t\n"
    path = _write(tmp_path, text)
    assert read_raw_pairs(path, extra_columns=True) == [("Go.", "Va !"), ("cafe\u0301", "Un  café")]
    with pytest.raises(PairsFileError, match=r"pairs\.tsv:1: the line has 2 tabs"):
        read_raw_pairs(path)
    with pytest.raises(PairsFileError, match=r"pairs\.tsv:2: the target is empty"):
        read_raw_pairs(_write(tmp_path, "a\tb\tx\nc\t \tx\n"), extra_columns=True)


def test_a_file_that_is_not_utf8_is_refused_naming_the_line(tmp_path):
    path = _write(tmp_path, "ok\tO K\nna\xefve\tN A\n".encode("latin-1"))
    with pytest.raises(PairsFileError, match=r"pairs\.tsv:2: not UTF-8 \(byte 0xef.*--train="):
        read_pairs(path, argument="--train")


def test_a_missing_file_is_refused_naming_the_argument(tmp_path):
    with pytest.raises(PairsFileError, match=r"`--valid` must be a readable file.*nope\.tsv"):
        read_pairs(tmp_path / "nope.tsv", argument="--valid")


def test_sources_files_keep_what_precedes_a_tab_and_skip_blank_lines(tmp_path):
    path = _write(tmp_path, "knife\nbox\tB AA K S\n\n cafe\u0301 \n")
    assert read_sources(path) == ["knife", "box", "caf\u00e9"]
