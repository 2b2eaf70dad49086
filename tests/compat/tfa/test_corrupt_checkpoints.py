"""Issue 31, item 3: a corrupt tfa checkpoint raises the `ValueError` naming the file that every
other failed load raises (before: a raw `OpError` or `IndexError`), and the cell is unchanged."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from keras_attention.migrate import load_tfa_weights
from tests.backend_utils import to_numpy
from tests.compat.tfa.test_tfa_checkpoints import FIXTURES, _built

NAME = "luong_lstm"
DATA = ".data-00000-of-00001"


def _random_index(index, data):
    index.write_bytes(np.random.default_rng(0).bytes(index.stat().st_size))


def _truncated_index(index, data):
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])


def _truncated_data(index, data):
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])


def _empty_data(index, data):
    data.write_bytes(b"")


def _bit_flipped_data(index, data):
    content = bytearray(data.read_bytes())
    content[len(content) // 2] ^= 0x10
    data.write_bytes(bytes(content))


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (_random_index, "Could not read"),
        (_truncated_index, "Could not read"),
        (_truncated_data, "Could not read"),
        (_empty_data, "Could not read"),
        (_bit_flipped_data, "corrupt"),
    ],
    ids=["random-index", "truncated-index", "truncated-data", "empty-data", "bit-flipped-data"],
)
def test_corrupt_checkpoint_is_a_value_error_naming_the_file(tmp_path, corrupt, message):
    for suffix in (".index", DATA):
        shutil.copy(FIXTURES / f"{NAME}{suffix}", tmp_path / f"{NAME}{suffix}")
    corrupt(tmp_path / f"{NAME}.index", tmp_path / f"{NAME}{DATA}")
    cell = _built(NAME)
    before = [to_numpy(w).copy() for w in cell.weights]
    path = str(tmp_path / NAME)
    with pytest.raises(ValueError, match=message) as error:
        load_tfa_weights(cell, path)
    assert f"checkpoint={path!r}" in str(error.value)
    for weight, old in zip(cell.weights, before):
        np.testing.assert_array_equal(to_numpy(weight), old)
    # The intact checkpoint still loads into the same cell.
    load_tfa_weights(cell, str(FIXTURES / NAME))
