"""SavedModel export: char tokenization loads without tensorflow_text; wordpiece with it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import tensorflow as tf

from keras_attention.text import CharTokenizer, WordpieceTokenizer

TEXTS = ["Héllo  WÖRLD", "привет\u00a0мир", "", "世界"]


def export(tokenizer, path):
    module = tf.Module()
    module.encode = tf.function(
        lambda s: {"ids": tokenizer.tokenize(s, add_start=True, add_end=True)},
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    module.decode = tf.function(
        lambda ids: {"text": tokenizer.detokenize(ids)},
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    tf.saved_model.save(module, str(path))


def test_char_saved_model_loads_without_tensorflow_text(tmp_path):
    tokenizer = CharTokenizer(lowercase=True)
    tokenizer.adapt(TEXTS[:2])
    export(tokenizer, tmp_path)
    expected_ids = tokenizer.tokenize(TEXTS, add_start=True, add_end=True).numpy().tolist()
    expected_text = tokenizer.detokenize(expected_ids).numpy().tolist()
    code = textwrap.dedent(
        f"""
        import sys
        import tensorflow as tf
        loaded = tf.saved_model.load({str(tmp_path)!r})
        ids = loaded.encode(tf.constant({TEXTS!r}))["ids"]
        text = loaded.decode(ids)["text"]
        assert "tensorflow_text" not in sys.modules
        print(repr((ids.numpy().tolist(), text.numpy().tolist())))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert eval(result.stdout.strip().splitlines()[-1]) == (expected_ids, expected_text)


def test_wordpiece_saved_model_round_trip(tmp_path):
    tokenizer = WordpieceTokenizer(lowercase=True)
    tokenizer.adapt(TEXTS)
    export(tokenizer, tmp_path)
    loaded = tf.saved_model.load(str(tmp_path))
    ids = loaded.encode(tf.constant(TEXTS))["ids"]
    expected = tokenizer.tokenize(TEXTS, add_start=True, add_end=True)
    assert ids.numpy().tolist() == expected.numpy().tolist()
    text = loaded.decode(ids)["text"].numpy().tolist()
    assert text == tokenizer.detokenize(expected).numpy().tolist()
    assert [t.decode() for t in text] == ["héllo wörld", "привет мир", "", "世 界"]
