"""Compiled decoding for a trained `Seq2Seq`: ids to ids, strings to strings."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import ops

from keras_attention.decoding.step_fn import check_int, check_length_penalty


class Translator:
    """Greedy or beam-search decoding of a trained `Seq2Seq`, compiled once.

    On TensorFlow the search runs in a `tf.function` (compiled with XLA by default: one XLA
    program per padded source length); on JAX in `jax.jit` (XLA, with the model's weights
    passed in as arguments, so training the model after compiling is seen); on PyTorch
    eagerly. Tokenization and detokenization (TensorFlow-only `keras_attention.text`) stay
    outside it. Under XLA, source lengths are padded up to a multiple of `pad_to_multiple` so
    that a stream of batches reuses a few compiled programs (padding is masked, so results do
    not change).

    Args:
        model: A trained (or reloaded) `Seq2Seq`.
        max_length: The most target tokens generated, the end token included. Defaults to
            `50`.
        beam_width: `1` for greedy search, more for beam search. Defaults to `1`.
        length_penalty: GNMT alpha for beam search. Defaults to `0.6`.
        jit_compile: Compile the search with XLA: `True`, `False` or `"auto"` (XLA on the
            TensorFlow and JAX backends, eager on PyTorch, where `True` is an error: XLA
            needs TensorFlow or JAX). Defaults to `"auto"`.
        pad_to_multiple: With `jit_compile`, pad source lengths to a multiple of this.
            Defaults to `16`.
        source_tokenizer: Defaults to the model's.
        target_tokenizer: Defaults to the model's.

    Example:

    >>> import numpy as np
    >>> from keras_attention.models import Seq2Seq
    >>> translator = Translator(Seq2Seq(12, 9, units=16), max_length=5, jit_compile=False)
    >>> result = translator(np.array([[5, 6, 3], [4, 3, 0]]))
    >>> result["ids"].shape, result["alignments"].shape
    ((2, 5), (2, 5, 3))
    """

    def __init__(
        self,
        model: Any,
        max_length: int = 50,
        beam_width: int = 1,
        length_penalty: float = 0.6,
        jit_compile: bool | str = "auto",
        pad_to_multiple: int = 16,
        source_tokenizer: Any = None,
        target_tokenizer: Any = None,
    ) -> None:
        from keras_attention.models.seq2seq import Seq2Seq

        if not isinstance(model, Seq2Seq):
            raise TypeError(
                f"`model` must be a keras_attention Seq2Seq model. Received: model={model!r}"
            )
        self.model = model
        self.max_length = check_int("max_length", max_length, minimum=1)
        self.beam_width = check_int("beam_width", beam_width, minimum=1)
        self.length_penalty = check_length_penalty(length_penalty)
        self.pad_to_multiple = check_int("pad_to_multiple", pad_to_multiple, minimum=1)
        self.source_tokenizer = source_tokenizer or model.source_tokenizer
        self.target_tokenizer = target_tokenizer or model.target_tokenizer
        self.jit_compile = _resolve_jit_compile(jit_compile)
        self._compiled = None

    def generate(self, source_ids) -> dict:
        """The search on `[B, S]` ids as backend tensors (traceable; what exports call)."""
        return self.model.generate(
            source_ids,
            max_length=self.max_length,
            beam_width=self.beam_width,
            length_penalty=self.length_penalty,
        )

    def _function(self):
        if self._compiled is None:
            if keras.backend.backend() == "tensorflow":
                import tensorflow as tf

                self._compiled = tf.function(
                    self.generate,
                    input_signature=[tf.TensorSpec([None, None], tf.int32, name="source_ids")],
                    jit_compile=self.jit_compile,
                )
            elif self.jit_compile:  # JAX (see `_resolve_jit_compile`)
                self._compiled = self._jax_function()
            else:
                self._compiled = self.generate
        return self._compiled

    def _jax_function(self):
        """`generate` under `jax.jit`, the weights passed as arguments (not baked in)."""
        import jax

        model = self.model
        if not model.built:  # variables cannot be created inside the stateless scope
            model.build({"source_ids": (None, None), "target_ids": (None, None)})
        variables = list(model.variables)

        def stateless_generate(values, source_ids):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return self.generate(source_ids)

        compiled = jax.jit(stateless_generate)
        return lambda source_ids: compiled([v.value for v in variables], source_ids)

    def __call__(self, source_ids) -> dict:
        """Decode source ids `[B, S]` (0 = padding); returns a dict of NumPy arrays with
        alignments cut back to the source length `S`."""
        source_ids = np.asarray(source_ids)
        if source_ids.ndim != 2 or not np.issubdtype(source_ids.dtype, np.integer):
            raise ValueError(
                "`source_ids` must be a [batch, length] array of integer token ids. Received: "
                f"dtype {source_ids.dtype}, shape {source_ids.shape}"
            )
        vocab = self.model.source_vocabulary_size
        if source_ids.size and (source_ids.min() < 0 or source_ids.max() >= vocab):
            raise ValueError(
                f"`source_ids` must be in [0, {vocab}) (the source vocabulary). Received ids "
                f"from {source_ids.min()} to {source_ids.max()}"
            )
        batch, length = source_ids.shape
        if batch == 0:
            return self._empty()
        # XLA compiles one program per shape: round lengths up. Without XLA, pad only to 1.
        multiple = self.pad_to_multiple if self.jit_compile else 1
        padded = -(-max(length, 1) // multiple) * multiple
        source_ids = np.pad(source_ids, ((0, 0), (0, padded - length))).astype("int32")
        result = {k: ops.convert_to_numpy(v) for k, v in self._function()(source_ids).items()}
        if "alignments" in result:
            result["alignments"] = result["alignments"][..., :length]
        return result

    def _empty(self) -> dict:
        return {
            "ids": np.zeros((0, self.max_length), "int32"),
            "scores": np.zeros((0,), "float32"),
            "lengths": np.zeros((0,), "int32"),
        }

    def translate(self, texts) -> list:
        """Translate a list of strings with the tokenizers; returns a list of `str`."""
        if self.source_tokenizer is None or self.target_tokenizer is None:
            raise ValueError(
                "`translate` needs source and target tokenizers: build the Seq2Seq model with "
                "`source_tokenizer=` and `target_tokenizer=` or pass them to the Translator."
            )
        if isinstance(texts, str):
            raise TypeError(
                f"`texts` must be a list of strings, not a single string. Received: {texts!r}"
            )
        texts = list(texts)
        if not texts:
            return []
        source_ids = ops.convert_to_numpy(self.source_tokenizer.tokenize(texts, add_end=True))
        ids = self(source_ids)["ids"]
        strings = ops.convert_to_numpy(self.target_tokenizer.detokenize(ids))
        return [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in strings]


def _resolve_jit_compile(jit_compile: Any) -> bool:
    """`jit_compile` as a bool for the current backend, or an error naming the backend."""
    backend = keras.backend.backend()
    if isinstance(jit_compile, str) and jit_compile == "auto":
        return backend in ("tensorflow", "jax")
    if not isinstance(jit_compile, (bool, np.bool_)):
        raise ValueError(
            f"`jit_compile` must be True, False or 'auto'. Received: jit_compile={jit_compile!r}"
        )
    if jit_compile and backend not in ("tensorflow", "jax"):
        raise ValueError(
            "`jit_compile=True` compiles the search with XLA, which needs the TensorFlow or JAX "
            f"backend; the Keras backend is {backend!r}. Pass jit_compile=False (or 'auto'). "
            f"Received: jit_compile={jit_compile!r}"
        )
    return bool(jit_compile)
