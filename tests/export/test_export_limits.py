"""Issue 31, item 2: the export's source-length limit and its checks of ranks and dtypes.

An untrained model is enough: these tests are about what the signatures accept and refuse,
and about answers that must not change (the limit is checked, never applied by truncation).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export import export_saved_model
from keras_attention.models import Seq2Seq
from keras_attention.text import CharTokenizer

LIMIT = 20
MAX_LENGTH = 6


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """`(tokenizer, path)` of an untrained char-level export with `max_source_length=LIMIT`."""
    keras.utils.set_random_seed(0)
    tokenizer = CharTokenizer(lowercase=True)
    tokenizer.adapt(["abcdefgh "])
    model = Seq2Seq(
        embedding_dim=8, units=16, source_tokenizer=tokenizer, target_tokenizer=tokenizer
    )
    model.generate(np.array([[4, 3]]), max_length=2)  # builds it (and must not break export)
    path = tmp_path_factory.mktemp("limits") / "model"
    export_saved_model(model, path, max_length=MAX_LENGTH, max_source_length=LIMIT)
    return tokenizer, path


@pytest.fixture(scope="module")
def export(export_dir):
    tokenizer, path = export_dir
    loaded = tf.saved_model.load(str(path))
    return tokenizer, loaded.signatures["translate"], loaded.signatures["serving_default"]


def test_a_source_at_the_limit_is_answered_one_past_it_is_refused(export):
    _, translate, serving = export
    assert translate(inputs=tf.constant(["a" * LIMIT]))["outputs"].shape == (1,)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"max_source_length={LIMIT} tokens: received a string of 21 tokens\]",
    ):
        translate(inputs=tf.constant(["a" * (LIMIT + 1), "ab"]))
    ids = tf.fill([2, LIMIT + 1], 4)
    assert serving(source_ids=ids)["ids"].shape == (2, MAX_LENGTH)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"`source_ids` is longer .*={LIMIT} tokens: received 22 columns \(at most 21",
    ):
        serving(source_ids=tf.fill([1, LIMIT + 2], 4))


def test_the_limit_counts_tokens_after_normalization(export):
    """Whitespace collapses before the count: 3 tokens in 50 bytes are answered."""
    _, translate, _ = export
    assert translate(inputs=tf.constant(["a" + " " * 48 + "b"]))["outputs"].shape == (1,)


def test_an_enormous_request_is_refused_before_tokenizing(export):
    """8 bytes per allowed token: 1,000,000 characters are refused by their byte count (the
    message says bytes), in far less time than tokenizing them would take."""
    _, translate, _ = export
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"received a string of 1000000 bytes \(more than"
    ):
        translate(inputs=tf.constant(["a" * 1_000_000]))


#: What a client of the export runs: TensorFlow alone, `keras_attention` unimportable.
CLIENT = """
import importlib.abc, json, sys

class NoPackage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "keras_attention":
            raise ImportError("a client has no keras_attention")

sys.meta_path.insert(0, NoPackage())
import tensorflow as tf

translate = tf.saved_model.load(sys.argv[1]).signatures["translate"]
seen = {}
for name, text in (("bytes", "a" * 100_000), ("tokens", "a" * int(sys.argv[2]))):
    try:
        translate(inputs=tf.constant([text]))
        seen[name] = None
    except tf.errors.InvalidArgumentError as error:
        seen[name] = {"message": error.message, "str": str(error)}
seen["modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "keras_attention")
print(json.dumps(seen))
"""


def test_a_client_reads_the_refusal_on_its_first_line(export_dir):
    """What a TensorFlow-only client sees on the error's first line: TensorFlow's frame (the
    function's name, "assertion failed: [": no op raises a message of its own), then the
    sentence naming the input, the limit and the length received. Before, the first line read
    `[An `inputs` string is longer than the export allows (160 bytes, for
    max_source_length=20 tokens); bytes received:] [100000]`."""
    _, path = export_dir
    run = subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(CLIENT), str(path), str(LIMIT + 1)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["modules"] == []
    expected = {
        "bytes": f"`inputs` is longer than the export allows, max_source_length={LIMIT} tokens: "
        f"received a string of 100000 bytes (more than {8 * LIMIT}, 8 a token, are refused "
        "before tokenizing)",
        "tokens": f"`inputs` is longer than the export allows, max_source_length={LIMIT} "
        f"tokens: received a string of {LIMIT + 1} tokens",
    }
    for name, sentence in expected.items():
        assert seen[name] is not None, f"{name}: answered"
        assert seen[name]["message"] == seen[name]["str"]
        first_line = seen[name]["str"].splitlines()[0]
        before, found, after = first_line.partition(sentence)
        assert found, first_line
        # Before the sentence, only TensorFlow's frame; after it, only the bracket closing it.
        assert re.fullmatch(r"(\{\{function_node [^}]+\}\} )?assertion failed: \[", before), before
        assert after == "]", first_line


@pytest.mark.parametrize(
    "signature, value, message",
    [
        ("translate", [["ab"]], r"Shape of tensor inputs \[1,1\] is not compatible with expected"),
        ("translate", "ab", r"Shape of tensor inputs \[\] is not compatible with expected"),
        ("serving", [4, 3], r"Shape of tensor source_ids \[2\] is not compatible"),
        ("serving", [[[4, 3]]], r"Shape of tensor source_ids \[1,1,2\] is not compatible"),
    ],
    ids=["2-D strings", "0-D string", "1-D ids", "3-D ids"],
)
def test_wrong_rank_is_a_shape_error(export, signature, value, message):
    """Before: "ConcatOp : Ranks of all input tensors should match" (2-D strings), a scan-axis
    error (a 0-d string), "slice index 1 of dimension 0 out of bounds" (1-D ids)."""
    _, translate, serving = export
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        if signature == "translate":
            translate(inputs=tf.constant(value))
        else:
            serving(source_ids=tf.constant(value, tf.int32))


@pytest.mark.parametrize(
    "signature, value, message",
    [
        ("translate", tf.constant([1]), "expected to be a string tensor but is a int32"),
        ("serving", tf.constant([[4, 3]], tf.int64), "a int32 tensor but is a int64"),
        ("serving", tf.constant([[4.0, 3.0]]), "expected to be a int32 tensor but is a float"),
    ],
    ids=["int strings", "int64 ids", "float ids"],
)
def test_wrong_dtype_is_named(export, signature, value, message):
    _, translate, serving = export
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        if signature == "translate":
            translate(inputs=value)
        else:
            serving(source_ids=value)


def test_nul_byte_reaches_the_model_through_translate(export):
    """Before: a NUL truncated the request ("JU\\x00LY" was read as "ju"). The ids the
    translate signature decodes are those of every character, the NUL an unknown token."""
    tokenizer, translate, serving = export
    text = "BA\x00DGE"
    ids = [tokenizer.vocabulary.index(c) if c != "\x00" else 1 for c in text.lower()] + [3]
    by_ids = serving(source_ids=tf.constant([ids], tf.int32))["ids"]
    expected = tokenizer.detokenize(by_ids).numpy().tolist()
    assert translate(inputs=tf.constant([text.encode()]))["outputs"].numpy().tolist() == expected
    truncated = serving(source_ids=tf.constant([ids[:2] + [3]], tf.int32))["ids"].numpy()
    assert by_ids.shape == truncated.shape


def test_bad_limits_are_refused(tmp_path):
    model = Seq2Seq(12, 9, embedding_dim=4, units=4)
    model.generate(np.array([[4, 3]]), max_length=2)
    for value in (0, -1, 2.5, "10"):
        with pytest.raises(ValueError, match="max_source_length"):
            export_saved_model(model, tmp_path / "x", max_source_length=value)
    with pytest.raises(ValueError, match="max_length=5000"):
        export_saved_model(model, tmp_path / "y", max_length=5000)


@pytest.mark.slow
def test_no_limit_when_asked(tmp_path):
    model = Seq2Seq(12, 9, embedding_dim=4, units=4)
    model.generate(np.array([[4, 3]]), max_length=2)
    path = export_saved_model(model, tmp_path / "free", max_length=3, max_source_length=None)
    serving = tf.saved_model.load(path).signatures["serving_default"]
    assert serving(source_ids=tf.fill([1, 3000], 4))["ids"].shape == (1, 3)
