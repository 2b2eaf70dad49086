"""Compiled decoding for a trained `Seq2Seq`: ids to ids, strings to strings."""

from __future__ import annotations

import warnings
from typing import Any

import keras
import numpy as np
from keras import ops

from keras_attention._deprecation import REMOVAL
from keras_attention._validation import check_int, is_flag
from keras_attention.decoding.results import empty_search_result
from keras_attention.decoding.searches import (
    KEYWORD_DEFAULTS,
    GreedySearch,
    Search,
    take_search_keywords,
)
from keras_attention.functional.sampling import check_sampling, check_seed
from keras_attention.models._inputs import check_host_source_ids, check_tokenizer

#: The most tokens a `Translator` (and so an export) generates: a ceiling on a request's cost
#: (eager `generate` at max_length=10**6 ran about 80 minutes on 2 CPU cores).
MAX_LENGTH_LIMIT = 4096


class Translator:
    """Greedy, beam-search or sampling decoding of a trained `Seq2Seq`, compiled once.

    On TensorFlow the search runs in a `tf.function` (compiled with XLA by default: one XLA
    program per padded source length); on JAX in `jax.jit` (XLA, with the model's weights
    passed in as arguments, so training the model after compiling is seen); on PyTorch
    eagerly. Tokenization and detokenization (TensorFlow-only `keras_attention.text`) stay
    outside it. Under XLA, source lengths are padded up to a multiple of `pad_to_multiple` so
    that a stream of batches reuses a few compiled programs (padding is masked, so results do
    not change).

    Args:
        model: A trained (or reloaded) `Seq2Seq` (or `Seq2SeqEnsemble`).
        search: The search, a `keras_attention.decoding` `GreedySearch`, `BeamSearch` or
            `SampleSearch`, its `max_length` at most `MAX_LENGTH_LIMIT` (4096) and a
            `SampleSearch`'s `top_k` at most the target vocabulary. A `SampleSearch`'s `seed`
            seeds the stream of per-call seeds (each call draws the next one from
            `np.random.default_rng(seed)`), so a new Translator with the same search repeats
            its outputs call for call; a call's own `seed=` wins. Kept as
            `translator.search`; `export_saved_model` and `export_litert` take it from there
            whole. Defaults to `GreedySearch()` (`max_length=50`).
        jit_compile: Compile the search with XLA: `True`, `False` or `"auto"` (XLA on the
            TensorFlow and JAX backends, eager on PyTorch, where `True` is an error: XLA
            needs TensorFlow or JAX). Defaults to `"auto"`.
        pad_to_multiple: With `jit_compile`, pad source lengths to a multiple of this.
            Defaults to `16`.
        source_tokenizer: Defaults to the model's.
        target_tokenizer: Defaults to the model's.
        **deprecated: The search keywords of 0.2 (`max_length`, `beam_width`,
            `length_penalty`, `coverage_penalty`, `sample`, `temperature`, `top_k`, `top_p`,
            `seed`): they still make the search, with a `DeprecationWarning` showing the
            `search=` to pass instead, until 0.4.0.

    Example:

    >>> import numpy as np
    >>> from keras_attention.decoding import GreedySearch, SampleSearch
    >>> from keras_attention.models import Seq2Seq
    >>> model = Seq2Seq(12, 9, units=16)
    >>> translator = Translator(model, GreedySearch(max_length=5), jit_compile=False)
    >>> result = translator(np.array([[5, 6, 3], [4, 3, 0]]))
    >>> result["ids"].shape, result["alignments"].shape
    ((2, 5), (2, 5, 3))
    >>> sampler = Translator(model, SampleSearch(max_length=5, top_k=3), jit_compile=False)
    >>> bool((sampler(np.array([[5, 6, 3]]), seed=1)["ids"]
    ...       == sampler(np.array([[5, 6, 3]]), seed=1)["ids"]).all())
    True
    >>> sampler.search
    SampleSearch(max_length=5, top_k=3)
    """

    def __init__(
        self,
        model: Any,
        search: Search | None = None,
        *,
        jit_compile: bool | str = "auto",
        pad_to_multiple: int = 16,
        source_tokenizer: Any = None,
        target_tokenizer: Any = None,
        **deprecated: Any,
    ) -> None:
        if not _is_seq2seq(model):
            raise TypeError(
                f"`model` must be a keras_attention Seq2Seq model. Received: model={model!r}"
            )
        self.model = model
        search = take_search_keywords("Translator", deprecated, search, GreedySearch())
        if search.max_length > MAX_LENGTH_LIMIT:
            raise ValueError(
                f"`max_length` must be at most {MAX_LENGTH_LIMIT} in a Translator or an export: "
                "the search runs every step for rows that never end (each costs a decoder step, "
                "and the alignments grow as max_length x source length); call "
                f"`Seq2Seq.generate` for longer outputs. Received: max_length={search.max_length!r}"
            )
        if search.kind == "sample":  # `top_k` against the vocabulary: known here only
            check_sampling(
                search.temperature, search.top_k, search.top_p, model.target_vocabulary_size
            )
        self._search = search
        self._seeds = np.random.default_rng(getattr(search, "seed", None))
        self.pad_to_multiple = check_int("pad_to_multiple", pad_to_multiple, minimum=1)
        self.source_tokenizer = check_tokenizer(
            "source_tokenizer",
            model.source_tokenizer if source_tokenizer is None else source_tokenizer,
            model.source_vocabulary_size,
        )
        self.target_tokenizer = check_tokenizer(
            "target_tokenizer",
            model.target_tokenizer if target_tokenizer is None else target_tokenizer,
            model.target_vocabulary_size,
        )
        self.jit_compile = _resolve_jit_compile(jit_compile)
        self._compiled = None

    @property
    def search(self) -> Search:
        """The `keras_attention.decoding` search this Translator decodes with (read-only: the
        compiled search is traced with it; make a new Translator for another)."""
        return self._search

    def __getattr__(self, name: str) -> Any:
        # 0.2's mirrors of the search options (`translator.beam_width`, ...): read from
        # `search` with a `DeprecationWarning` (an option the search's kind lacks reads as the
        # old keyword's default, as it did).
        if name in KEYWORD_DEFAULTS and name != "return_beams" and "_search" in self.__dict__:
            warnings.warn(
                f"Translator.{name} is deprecated: read translator.search.{name} (the search "
                f"is one value now). The attribute will be removed in keras_attention {REMOVAL}.",
                DeprecationWarning,
                stacklevel=2,
            )
            if name == "sample":
                return self._search.kind == "sample"
            return getattr(self._search, name, KEYWORD_DEFAULTS[name])
        raise AttributeError(f"'Translator' object has no attribute {name!r}")

    def generate(self, source_ids, seed=0) -> dict:
        """The search on `[B, S]` ids as backend tensors (traceable; what exports call).
        `seed` (an int or an int32 scalar tensor) is used when sampling."""
        return self.model.generate(
            source_ids, self._search, seed=seed, top_k_method=self.top_k_method
        )

    @property
    def top_k_method(self) -> str:
        """How sampling finds its top-k cut: by `ops.top_k` on TensorFlow without XLA (TF's
        TopKV2 kernel is a fast partial sort; XLA on CPU makes it a full sort, so with XLA
        the cut is found by bisection), else `sample_search`'s `"auto"`."""
        if keras.backend.backend() == "tensorflow" and not self.jit_compile:
            return "sort"
        return "auto"

    def _function(self):
        if self._compiled is None:
            if keras.backend.backend() == "tensorflow":
                import tensorflow as tf

                self._compiled = tf.function(
                    self.generate,
                    input_signature=[
                        tf.TensorSpec([None, None], tf.int32, name="source_ids"),
                        tf.TensorSpec([], tf.int32, name="seed"),
                    ],
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

        def stateless_generate(values, source_ids, seed):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return self.generate(source_ids, seed)

        compiled = jax.jit(stateless_generate)
        return lambda source_ids, seed: compiled([v.value for v in variables], source_ids, seed)

    def __call__(self, source_ids, seed: int | None = None) -> dict:
        """Decode source ids `[B, S]` (0 = padding); returns a dict of NumPy arrays with
        alignments cut back to the source length `S`. `seed` (sampling only): this call's
        seed, an int in [0, 2**31). Defaults to `None` (the next of the Translator's seeds)."""
        if seed is None:
            seed = int(self._seeds.integers(0, 2**31 - 1))
        else:
            seed = check_seed(seed, allow_none=False)
        source_ids = check_host_source_ids(
            source_ids, self.model.source_vocabulary_size, getattr(self.model, "oov_id", None)
        )
        batch, length = source_ids.shape
        if batch == 0:  # the keys of a non-empty result, zero rows
            empty = empty_search_result(self._search.max_length, self._search.beam_width, length)
            return {k: ops.convert_to_numpy(v) for k, v in empty.items()}
        # XLA compiles one program per shape: round lengths up. Without XLA, pad only to 1.
        multiple = self.pad_to_multiple if self.jit_compile else 1
        padded = -(-max(length, 1) // multiple) * multiple
        source_ids = np.pad(source_ids, ((0, 0), (0, padded - length))).astype("int32")
        seed = np.asarray(seed, "int32")
        result = {k: ops.convert_to_numpy(v) for k, v in self._function()(source_ids, seed).items()}
        if "alignments" in result:
            result["alignments"] = result["alignments"][..., :length]
        return result

    def translate(self, texts, n_best: int | None = None) -> list:
        """Translate a list of strings with the tokenizers; returns a list of `str`, or with
        `n_best=k` (beam search, `k <= beam_width`) a list of k strings per input, best first."""
        if n_best is not None:
            n_best = check_int("n_best", n_best, minimum=1)
            if n_best > self._search.beam_width:
                raise ValueError(
                    f"`n_best` must be at most the beam width ({self._search.beam_width}): "
                    f"beam search keeps that many hypotheses. Received: n_best={n_best}"
                )
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
        result = self(source_ids)
        if n_best is None:
            return self._strings(result["ids"])
        if self._search.kind != "beam":  # n_best=1 of greedy search or sampling
            return [[text] for text in self._strings(result["ids"])]
        beams = result["beam_ids"][:, :n_best]
        strings = self._strings(beams.reshape(-1, beams.shape[-1]))
        return [strings[i * n_best : (i + 1) * n_best] for i in range(len(texts))]

    def _strings(self, ids) -> list:
        strings = ops.convert_to_numpy(self.target_tokenizer.detokenize(ids))
        return [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in strings]


def _is_seq2seq(model: Any) -> bool:
    """Whether `model` is a `Seq2Seq`, known by its decoding interface (this module is below
    `seq2seq.py`, which imports it for `Seq2Seq.translate`: no import cycle)."""
    return isinstance(model, keras.Model) and all(
        hasattr(model, name)
        for name in ("generate", "source_vocabulary_size", "source_tokenizer", "target_tokenizer")
    )


def _resolve_jit_compile(jit_compile: Any) -> bool:
    """`jit_compile` as a bool for the current backend, or an error naming the backend."""
    backend = keras.backend.backend()
    if isinstance(jit_compile, str) and jit_compile == "auto":
        return backend in ("tensorflow", "jax")
    if not is_flag(jit_compile):
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
