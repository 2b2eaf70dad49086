"""Shared helpers for the `keras_attention.text` tests: alphabets, references, graph ops."""

from __future__ import annotations

import tensorflow as tf
from hypothesis import strategies as st

# Letters of several scripts (no punctuation), and whitespace of several kinds.
LATIN = "abcdeéèêàçñöüßøå"
CYRILLIC = "абвгдежзийклмнопрстуфхцчшщыэюя"
CJK = "世界你好中文字日本語"
ARABIC = "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
SPACES = " \t\n\u00a0\u202f\u2009\u3000"

LETTERS = LATIN + CYRILLIC + ARABIC


def texts_strategy(alphabet: str, max_size: int = 5):
    """Lists of strings over `alphabet` (with all kinds of spaces), empty strings included."""
    return st.lists(st.text(alphabet + SPACES, max_size=14), min_size=1, max_size=max_size)


def words_texts_strategy(alphabet: str = LETTERS, max_size: int = 5):
    """Lists of space-separated words over `alphabet` (no punctuation, no CJK), and ''."""
    word = st.text(alphabet, min_size=1, max_size=8)
    sentence = st.lists(word, max_size=6).flatmap(
        lambda words: st.tuples(*[st.sampled_from(SPACES) for _ in words]).map(
            lambda spaces: "".join(w + s for w, s in zip(words, spaces))
        )
    )
    return st.lists(sentence, min_size=1, max_size=max_size)


def python_normalize(text: str) -> str:
    """The reference for `normalize_text` (lowercase=False)."""
    return " ".join(text.split())


def decode(strings) -> list[str]:
    return [s.decode("utf-8") for s in strings.numpy()]


def graph_ops(concrete_fn) -> set[str]:
    """Every op type in a concrete function's graph, its function library included."""
    graph_def = concrete_fn.graph.as_graph_def()
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops


def non_core_ops(ops: set[str]) -> set[str]:
    """Ops that are not core TensorFlow ops (`tf.raw_ops` only lists those)."""
    return {op for op in ops if not hasattr(tf.raw_ops, op)}


STRING_SIGNATURE = [tf.TensorSpec([None], tf.string)]
