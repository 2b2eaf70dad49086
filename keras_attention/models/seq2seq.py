"""An attention encoder-decoder as one trainable (teacher-forced) Keras model."""

from __future__ import annotations

import copy
from typing import Any

import keras
import numpy as np
from keras import ops

from keras_attention._deprecation import rename_config_key, take_renamed
from keras_attention._validation import check_int
from keras_attention.decoding import beam_search, greedy_search, sample_search
from keras_attention.decoding.results import empty_search_result
from keras_attention.decoding.searches import (
    KEYWORD_DEFAULTS,
    GreedySearch,
    Search,
    take_search_keywords,
)
from keras_attention.decoding.step_fn import check_tokens
from keras_attention.models._distribute import MultiWorkerMixin
from keras_attention.models._inputs import (
    at_least_one_step,
    check_host_ids,
    check_host_source_ids,
    check_tokenizer,
    map_out_of_vocabulary,
)
from keras_attention.models.decoder import Seq2SeqDecoder
from keras_attention.models.encoder import Seq2SeqEncoder
from keras_attention.models.layout import get_layout_map
from keras_attention.models.translator import Translator

INPUT_NAMES = ("source_ids", "target_ids")

#: The options of the convenience form that belong to the parts, with their defaults. Each is
#: the part's own name, or that name with the prefix of the part it sizes (`encoder_units`,
#: `encoder_num_layers`, `decoder_num_layers`): nothing is renamed on its way down.
PART_OPTIONS = {
    "embedding_dim": 64, "units": 128, "encoder_units": None, "rnn": "lstm",
    "encoder_num_layers": 1, "decoder_num_layers": 1, "bidirectional": True,
    "attention": "luong", "score_mode": "general", "alignment": "global", "window_radius": 8,
    "score_units": None, "input_feeding": True, "state_handover": "dense", "dropout": 0.0,
    "sampling_probability": None, "sampling_mode": "sample",
}  # fmt: skip

#: The decoder's options that the convenience form passes under their own names.
_DECODER_OPTIONS = (
    "attention", "score_mode", "alignment", "window_radius", "score_units", "input_feeding",
    "state_handover", "dropout", "sampling_probability", "sampling_mode",
)  # fmt: skip

#: The keywords (and config keys) of 0.1/0.2 and their names since (docs/design.md §9, Names).
RENAMED = {
    "attention_dim": "score_units",
    "encoder_layers": "encoder_num_layers",
    "decoder_layers": "decoder_num_layers",
    "scheduled_sampling": "sampling_probability",
    "scheduled_sampling_mode": "sampling_mode",
}
_ANY_SHAPE = {"source_ids": (None, None), "target_ids": (None, None)}


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2Seq(MultiWorkerMixin, keras.Model):
    """Encoder (`Seq2SeqEncoder`) + attentional decoder (`Seq2SeqDecoder`) in one model.

    Called on `{"source_ids": [B, S], "target_ids": [B, T]}` (or a pair) it returns the
    teacher-forced logits `[B, T, V]`: `target_ids` are the decoder inputs (the target
    shifted right, starting with `start_id`) and the labels are the target shifted left
    (`keras_attention.text.pairs_dataset` makes both). Id 0 is padding on both sides: the
    logits carry the Keras mask of the targets, so `compile(loss=
    "sparse_categorical_crossentropy", metrics=["accuracy"])` ignores padded steps.

    `generate` decodes greedily or with beam search; `translate` does strings to strings
    when the model owns its tokenizers (they are saved in its config, so a reloaded `.keras`
    model translates). `keras_attention.models.Translator` wraps both in compiled functions,
    and `keras_attention.export.export_saved_model` writes them as a SavedModel.

    Under `tf.distribute.MultiWorkerMirroredStrategy`, `fit(dataset)` and `evaluate` work as
    on one worker, where Keras 3 fails before the first step for its own models
    (keras-team/keras#20585, tensorflow/tensorflow#72388; docs/multi-worker-keras-bug.md).

    Two ways to build one. **Composed**: build a `Seq2SeqEncoder` and a `Seq2SeqDecoder`
    and pass them, `Seq2Seq(encoder=..., decoder=..., start_id=..., end_id=...)`, with the
    model's own options only (the special ids, `oov_id`, the tokenizers; the vocabulary sizes
    are the parts'): the model checks that the parts fit (the decoder's dot score against the
    encoder's output size, a state copy against the encoder's states, the tokenizers against
    the vocabularies) and saves them whole. **From options** (the convenience form, the
    arguments below): the model builds both parts, each option passed to the part under the
    part's own name, or that name with the prefix of the part it belongs to (`encoder_units`
    is the encoder's `units`, `encoder_num_layers` / `decoder_num_layers` the parts'
    `num_layers`, `source_`/`target_vocabulary_size` the parts' `vocabulary_size`). Both give
    the same model: the same weights give the same logits.

    Args:
        source_vocabulary_size: Source vocabulary size; defaults to `source_tokenizer`'s.
        target_vocabulary_size: Target vocabulary size; defaults to `target_tokenizer`'s.
        embedding_dim: Size of the token embeddings (both sides). Defaults to `64`.
        units: Units of the decoder cells. Defaults to `128`.
        encoder_units: Units of the encoder RNNs per direction. Defaults to `None` (`units`).
        rnn: `"lstm"` or `"gru"`, both sides. Defaults to `"lstm"`.
        encoder_num_layers: Recurrent layers in the encoder (its `num_layers`). Defaults
            to `1`. Called `encoder_layers` up to 0.2.
        decoder_num_layers: Stacked cells in the decoder (its `num_layers`). Defaults to
            `1`. Called `decoder_layers` up to 0.2.
        bidirectional: Bidirectional encoder. Defaults to `True`.
        attention: `"luong"`, `"bahdanau"`, `"monotonic"` or `"location_sensitive"`; see
            `Seq2SeqDecoder`. Defaults to `"luong"`.
        score_mode: Luong score: `"dot"`, `"general"` or `"concat"`. Defaults to `"general"`.
        alignment: Luong alignment: `"global"`, `"local_monotonic"`, `"local_predictive"`.
            Defaults to `"global"`.
        window_radius: D of local attention. Defaults to `8`.
        score_units: Units U of the additive / concat score (and of local-p's position
            network): the attention layer's `score_units` (`units` here is the decoder cells'
            size, and h̃'s). Defaults to `None` (the query size). Called `attention_dim` up
            to 0.2.0.
        input_feeding: Luong input feeding. Defaults to `True`.
        state_handover: `"dense"`, `"copy"` or `"none"`; see `Seq2SeqDecoder`.
            Defaults to `"dense"`.
        dropout: Dropout rate. Defaults to `0`.
        start_id: The id fed at the first decoder step. Defaults to `2`.
        end_id: The id that ends a target. Defaults to `3`.
        sampling_probability: Train with scheduled sampling (Bengio et al., 2015): the
            initial probability in [0, 1] of feeding the decoder its own sampled previous
            token instead of the ground truth (`AttentionRNN(sampling_probability=...)`;
            never the padding id 0 nor `start_id`, which a target does not hold), changed
            between epochs by the `ScheduledSampling` callback. Teacher-forced evaluation and
            decoding are unaffected. Defaults to `None` (off). Called `scheduled_sampling`
            up to 0.2.
        sampling_mode: `"sample"` (from the softmax) or `"argmax"`. Defaults to
            `"sample"`. Called `scheduled_sampling_mode` up to 0.2.
        oov_id: The id that source and target ids outside their vocabulary
            (`id < 0` or `id >= vocabulary size`) are mapped to inside the model, in `fit`,
            `evaluate`, `predict`, `generate` and `Translator` alike (e.g. `1`, the `[UNK]` of
            `keras_attention.text`'s tokenizers); in `[0, min(source_vocabulary_size,
            target_vocabulary_size))`. Defaults to `None`: such ids are an error where they
            are host data (NumPy arrays given to the model, `fit` (and its
            `validation_data`), `evaluate`, `predict` or the `*_on_batch` methods; NumPy
            arrays or lists given to `generate` or a `Translator`), and where they are backend
            tensors that the model does not read back (a `tf.data` pipeline, a traced or
            exported function) each embeds as a zero vector, on every backend.
        source_tokenizer: Optional `keras_attention.text` tokenizer of the source side.
        target_tokenizer: Optional tokenizer of the target side.
        encoder: A `Seq2SeqEncoder` (keyword only, with `decoder`): the composed form, where
            the options of the parts above must be left out.
        decoder: A `Seq2SeqDecoder` (keyword only, with `encoder`).
        **kwargs: Base model arguments (`name`, ...).

    The keywords of 0.2 (`attention_dim`, `encoder_layers`, `decoder_layers`,
    `scheduled_sampling`, `scheduled_sampling_mode`) still work, with a `DeprecationWarning`,
    until 0.4.0; configs saved with them load silently.

    Example:

    >>> import numpy as np
    >>> model = Seq2Seq(source_vocabulary_size=12, target_vocabulary_size=9, units=16)
    >>> logits = model({"source_ids": np.array([[5, 6, 3, 0]]),
    ...                 "target_ids": np.array([[2, 7, 8]])})
    >>> tuple(logits.shape)
    (1, 3, 9)
    >>> from keras_attention.decoding import GreedySearch
    >>> result = model.generate(np.array([[5, 6, 3, 0]]), GreedySearch(max_length=4))
    >>> tuple(result["ids"].shape), tuple(result["alignments"].shape)
    ((1, 4), (1, 4, 4))

    The same model, composed from its parts:

    >>> encoder = Seq2SeqEncoder(12, embedding_dim=64, units=16)
    >>> decoder = Seq2SeqDecoder(9, embedding_dim=64, units=16)
    >>> composed = Seq2Seq(encoder=encoder, decoder=decoder)
    >>> composed.build({"source_ids": (None, None), "target_ids": (None, None)})
    >>> composed.set_weights(model.get_weights())
    >>> again = composed({"source_ids": np.array([[5, 6, 3, 0]]),
    ...                   "target_ids": np.array([[2, 7, 8]])})
    >>> bool(np.allclose(keras.ops.convert_to_numpy(again), keras.ops.convert_to_numpy(logits),
    ...                  atol=1e-6))
    True
    """

    def __init__(
        self,
        source_vocabulary_size: int | None = None,
        target_vocabulary_size: int | None = None,
        embedding_dim: int = 64,
        units: int = 128,
        encoder_units: int | None = None,
        rnn: str = "lstm",
        encoder_num_layers: int = 1,
        decoder_num_layers: int = 1,
        bidirectional: bool = True,
        attention: str = "luong",
        score_mode: str = "general",
        alignment: str = "global",
        window_radius: int = 8,
        score_units: int | None = None,
        input_feeding: bool = True,
        state_handover: str = "dense",
        dropout: float = 0.0,
        start_id: int = 2,
        end_id: int = 3,
        sampling_probability: float | None = None,
        sampling_mode: str = "sample",
        source_tokenizer: Any = None,
        target_tokenizer: Any = None,
        oov_id: int | None = None,
        *,
        encoder: Seq2SeqEncoder | None = None,
        decoder: Seq2SeqDecoder | None = None,
        **kwargs: Any,
    ) -> None:
        options = {
            "embedding_dim": embedding_dim, "units": units, "encoder_units": encoder_units,
            "rnn": rnn, "encoder_num_layers": encoder_num_layers,
            "decoder_num_layers": decoder_num_layers, "bidirectional": bidirectional,
            "attention": attention, "score_mode": score_mode, "alignment": alignment,
            "window_radius": window_radius, "score_units": score_units,
            "input_feeding": input_feeding, "state_handover": state_handover, "dropout": dropout,
            "sampling_probability": sampling_probability, "sampling_mode": sampling_mode,
        }  # fmt: skip
        for old, new in RENAMED.items():
            options[new] = take_renamed(
                kwargs, "Seq2Seq", old, new, options[new], default=PART_OPTIONS[new]
            )
        super().__init__(**kwargs)
        if encoder is None and decoder is None:
            encoder, decoder = self._parts_of_options(
                (source_vocabulary_size, target_vocabulary_size),
                (source_tokenizer, target_tokenizer),
                (start_id, end_id, oov_id),
                options,
            )
        else:
            self._config = None  # a composed model: its config is its parts' (`get_config`)
            sizes = _check_parts(encoder, decoder, options)
            sizes = [
                _part_size(f"{side}_vocabulary_size", given, size, part)
                for side, given, size, part in zip(
                    ("source", "target"),
                    (source_vocabulary_size, target_vocabulary_size),
                    sizes,
                    ("encoder", "decoder"),
                )
            ]
            self._set_vocabularies(
                sizes, (source_tokenizer, target_tokenizer), start_id, end_id, oov_id
            )
        self.encoder, self.decoder = encoder, decoder
        # The sampler feeds back what a target can hold: never [PAD] nor [START], ids only
        # the model knows (a decoder built alone cannot exclude them itself).
        self.decoder._exclude_from_sampling({0, self.start_id} - {self.end_id})

    def _parts_of_options(self, sizes, tokenizers, ids, options: dict) -> tuple:
        """The encoder and decoder of the convenience form, each option passed under the
        part's own name (`encoder_units` → the encoder's `units`, `decoder_num_layers` → the
        decoder's `num_layers`: the prefix says which part); keeps the config it writes."""
        source_vocabulary_size, target_vocabulary_size = self._set_vocabularies(
            sizes, tokenizers, *ids
        )
        o = dict(options)
        units = check_int("units", o["units"], minimum=1)
        encoder_units = check_int(
            "encoder_units", units if o["encoder_units"] is None else o["encoder_units"], minimum=1
        )
        self._config = {
            "source_vocabulary_size": source_vocabulary_size,
            "target_vocabulary_size": target_vocabulary_size,
            **o,
            "units": units,
            "encoder_units": encoder_units,
            "start_id": self.start_id,
            "end_id": self.end_id,
        }
        for key in ("sampling_probability", "sampling_mode"):
            del self._config[key]
        if o["sampling_probability"] is not None:  # (absent keys keep older configs identical)
            self._config["sampling_probability"] = o["sampling_probability"]
            self._config["sampling_mode"] = o["sampling_mode"]
        if self.oov_id is not None:
            self._config["oov_id"] = self.oov_id
        _check_dot_sizes(o["attention"], o["score_mode"], units, encoder_units, o["bidirectional"])
        encoder = Seq2SeqEncoder(
            source_vocabulary_size,
            o["embedding_dim"],
            encoder_units,
            rnn=o["rnn"],
            num_layers=o["encoder_num_layers"],
            bidirectional=o["bidirectional"],
            dropout=o["dropout"],
            name="encoder",
        )
        decoder = Seq2SeqDecoder(
            target_vocabulary_size,
            o["embedding_dim"],
            units,
            rnn=o["rnn"],
            num_layers=o["decoder_num_layers"],
            **{key: o[key] for key in _DECODER_OPTIONS},
            name="decoder",
        )
        return encoder, decoder

    def _set_vocabularies(self, sizes, tokenizers, start_id, end_id, oov_id) -> tuple:
        """Check the tokenizers, vocabulary sizes and special ids and keep them (the tokenizers,
        `start_id`, `end_id`, `oov_id`); returns the source and target vocabulary sizes."""
        sides = ("source", "target")
        tokenizers = [check_tokenizer(f"{side}_tokenizer", t) for side, t in zip(sides, tokenizers)]
        self.source_tokenizer, self.target_tokenizer = tokenizers
        sizes = [
            _vocabulary_size(f"{side}_vocabulary_size", size, tokenizer)
            for side, size, tokenizer in zip(sides, sizes, tokenizers)
        ]
        for side, tokenizer, size in zip(sides, tokenizers, sizes):
            check_tokenizer(f"{side}_tokenizer", tokenizer, size)
        check_tokens({"start_id": start_id, "end_id": end_id}, sizes[1])
        for name, value in (("start_id", start_id), ("end_id", end_id)):
            if value == 0:
                raise ValueError(
                    f"`{name}` cannot be 0, the padding id (masked in the targets). "
                    f"Received: {name}=0"
                )
        self.start_id, self.end_id = int(start_id), int(end_id)
        self.oov_id = _check_oov_id(oov_id, *sizes)
        return tuple(sizes)

    @property
    def source_vocabulary_size(self) -> int:
        return self.encoder.vocabulary_size

    @property
    def target_vocabulary_size(self) -> int:
        return self.decoder.vocabulary_size

    @property
    def sampling_probability(self):
        """The scheduled-sampling probability (a non-trainable scalar variable, created when
        the model is built), or `None` when scheduled sampling is off."""
        return self.decoder.sampling_probability

    # ---------------------------------------------------------------- out-of-vocabulary ids
    def _in_vocabulary(self, ids, side: str):
        size = self.source_vocabulary_size if side == "source" else self.target_vocabulary_size
        return map_out_of_vocabulary(ids, size, self.oov_id)

    def _check_host_inputs(self, inputs) -> None:
        """Host ids (NumPy arrays) outside the vocabularies are an error when there is no
        `oov_id` (tensors are not read back: see `oov_id`)."""
        if self.oov_id is not None:
            return
        if isinstance(inputs, dict):
            pairs = [(name, inputs.get(name)) for name in INPUT_NAMES]
        elif isinstance(inputs, (list, tuple)) and len(inputs) == 2:
            pairs = list(zip(INPUT_NAMES, inputs))
        else:  # a dataset, a generator, a tensor: the in-model rule applies
            return
        sizes = (self.source_vocabulary_size, self.target_vocabulary_size)
        for (name, ids), size in zip(pairs, sizes):
            if isinstance(ids, np.ndarray):
                check_host_ids(name, ids, size)

    def __call__(self, *args, **kwargs):
        self._check_host_inputs(args[0] if args else kwargs.get("inputs"))
        return super().__call__(*args, **kwargs)

    def fit(self, x=None, *args, **kwargs):
        self._check_host_inputs(x)
        validation = kwargs.get("validation_data")
        if isinstance(validation, (list, tuple)) and validation:
            self._check_host_inputs(validation[0])
        return super().fit(x, *args, **kwargs)

    def evaluate(self, x=None, *args, **kwargs):
        self._check_host_inputs(x)
        return super().evaluate(x, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        self._check_host_inputs(x)
        return super().predict(x, *args, **kwargs)

    def train_on_batch(self, x, *args, **kwargs):
        self._check_host_inputs(x)
        return super().train_on_batch(x, *args, **kwargs)

    def test_on_batch(self, x, *args, **kwargs):
        self._check_host_inputs(x)
        return super().test_on_batch(x, *args, **kwargs)

    def predict_on_batch(self, x):
        self._check_host_inputs(x)
        return super().predict_on_batch(x)

    # ---------------------------------------------------------------- training graph
    def build(self, inputs_shape) -> None:
        source_shape, target_shape = _split_inputs(inputs_shape, "inputs_shape")
        # A part may come built: passed in after use, or deserialised with its build config.
        if not self.encoder.built:
            self.encoder.build(tuple(source_shape))
        memory_shape = (*tuple(source_shape), self.encoder.output_dim)
        if not self.decoder.built:
            self.decoder.build(tuple(target_shape), memory_shape)
        self.built = True

    def call(self, inputs, training=None):
        source_ids, target_ids = _check_ids(*_split_inputs(inputs, "inputs"))
        if source_ids.shape[0] == 0:  # an empty batch: empty logits
            return ops.zeros((0, target_ids.shape[1], self.target_vocabulary_size))
        source_ids = at_least_one_step(self._in_vocabulary(source_ids, "source"))
        target_ids = self._in_vocabulary(target_ids, "target")
        memory, memory_mask, states = self.encoder(source_ids, training=training)
        return self.decoder(
            target_ids, memory, memory_mask=memory_mask, encoder_states=states, training=training
        )

    def compute_output_shape(self, input_shape=None, **kwargs):
        # `input_shape` is Keras' name (`compute_output_shape(input_shape=...)` on its own
        # layers); `inputs_shape`, after the call argument `inputs`, is accepted too. Only one
        # named parameter, so that Keras passes the call's shapes to it without name checks.
        inputs_shape = kwargs.pop("inputs_shape", None)
        if kwargs or (input_shape is None) == (inputs_shape is None):
            raise TypeError(
                "`compute_output_shape` takes the shapes of `[source_ids, target_ids]` once, as "
                f"`input_shape`. Received: input_shape={input_shape}, inputs_shape={inputs_shape}"
                + "".join(f", {k}={v}" for k, v in kwargs.items())
            )
        input_shape = inputs_shape if input_shape is None else input_shape
        _, target_shape = _split_inputs(input_shape, "input_shape")
        return (*tuple(target_shape), self.target_vocabulary_size)

    # ---------------------------------------------------------------- inference
    def encode(self, source_ids, training=False):
        """`(memory, memory_mask, decoder initial state)` for source ids `[B, S]`."""
        source_ids = self._in_vocabulary(ops.cast(source_ids, "int32"), "source")
        source_ids = at_least_one_step(source_ids)
        memory, memory_mask, states = self.encoder(source_ids, training=training)
        batch = ops.shape(source_ids)[0]
        initial = self.decoder.initial_state(states, batch)
        state = self.decoder.cell.complete_initial_state(initial, batch, memory)
        return memory, memory_mask, state

    def make_step_fn(self, memory, memory_mask=None, beam_width: int = 1):
        """The `keras_attention.decoding.StepFunction` that `generate` searches with: the
        decoder's step (`Seq2SeqDecoder.make_step_fn`) with the padding id 0 and `start_id`
        never generated. It keeps the beam width, batch size and vocabulary size it was made
        for, so a search given other values raises an error naming them. Start it from the
        state `encode` returns."""
        step_fn = self.decoder.make_step_fn(memory, memory_mask, beam_width)
        return step_fn.never_generating({0, self.start_id} - {self.end_id})

    def generate(
        self,
        source_ids,
        search: Search | None = None,
        *,
        seed: Any = None,
        top_k_method: str = "auto",
        **deprecated: Any,
    ) -> dict:
        """Decode source ids `[B, S]` (0 = padding) to target ids with `search`.

        `search` is a `keras_attention.decoding` search: `GreedySearch` (the default, of
        `max_length=50`), `BeamSearch` (GNMT length and coverage penalties) or `SampleSearch`
        (temperature, top-k, top-p). `seed` is this call's seed when sampling (a Python int or
        an int32 tensor) and wins over the search's; `top_k_method` is how the draw finds its
        top-k cut (`keras_attention.decoding.sample_search`), not what it draws. The search
        keywords of 0.2 (`max_length=`, `beam_width=`, `sample=`, ...) still work, with a
        `DeprecationWarning` showing the search to pass instead, until 0.4.0.
        The padding id 0 and `start_id` are never generated (their logits are masked: 0 in the
        output means "after the end"). Traceable: `Translator` runs it under
        `tf.function(jit_compile=True)` on TensorFlow and `jax.jit` on JAX (pass `seed` as a
        tensor there).

        Cost: the search runs up to `max_length` decoder steps while any row has not ended
        (an untrained model rarely ends), each step costing one decoder step over the batch
        (times `beam_width`) and attention over the source; the alignments take
        `B x max_length x S` floats. Nothing but `max_length` bounds it here, so a huge
        `max_length` can run for a very long time. `Translator` and the exports cap it at
        `translator.MAX_LENGTH_LIMIT` (4096).

        Returns:
            The search's dict: `"ids"` `[B, max_length]` (end token included, 0 after it),
            `"scores"` `[B]`, `"lengths"` `[B]`, `"alignments"` `[B, max_length, S]` (and the
            beam search's extra entries).
        """
        search = take_search_keywords("generate", deprecated, search, GreedySearch())
        if isinstance(source_ids, (np.ndarray, list, tuple)):  # host data: check the ids now
            source_ids = check_host_source_ids(source_ids, self.source_vocabulary_size, self.oov_id)
        source_ids = ops.convert_to_tensor(source_ids)
        if len(source_ids.shape) != 2:
            raise ValueError(
                f"`source_ids` must be a [batch, length] tensor of token ids. Received: shape "
                f"{tuple(source_ids.shape)}"
            )
        if not self.built:
            self.build(_ANY_SHAPE)  # (a concrete batch size here broke a later export)
        if source_ids.shape[0] == 0:
            return empty_search_result(search.max_length, search.beam_width, source_ids.shape[1])
        result = self._search(
            source_ids,
            search,
            getattr(search, "seed", None) if seed is None else seed,
            top_k_method,
        )
        if source_ids.shape[1] == 0:  # decoded from one padding step: no source positions
            result["alignments"] = result["alignments"][..., :0]
        return result

    def _search(self, source_ids, search: Search, seed: Any, top_k_method: str) -> dict:
        """Encode, make the step function, run the search `search` names: the one copy of
        that glue (`generate`, and through it `Translator` and both exports)."""
        memory, memory_mask, state = self.encode(source_ids)
        step_fn = self.make_step_fn(memory, memory_mask, search.beam_width)
        common = {
            "batch_size": ops.shape(source_ids)[0],
            "start_id": self.start_id,
            "end_id": self.end_id,
            "max_length": search.max_length,
            "vocabulary_size": self.target_vocabulary_size,
        }
        if search.kind == "sample":
            return sample_search(
                step_fn, state, temperature=search.temperature, top_k=search.top_k,
                top_p=search.top_p, seed=seed, top_k_method=top_k_method, **common,
            )  # fmt: skip
        if search.kind == "greedy":
            return greedy_search(step_fn, state, **common)
        return beam_search(
            step_fn,
            state,
            beam_width=search.beam_width,
            length_penalty=search.length_penalty,
            coverage_penalty=search.coverage_penalty,
            **common,
        )

    def translate(
        self, texts, search: Search | None = None, n_best: int | None = None, **kwargs: Any
    ) -> list:
        """Strings to strings with the model's tokenizers and `search` (default
        `GreedySearch()`), through a new `Translator` (which compiles its search on first
        use; `kwargs` are its other arguments): keep a `Translator` for repeated calls.
        `n_best=k` returns k strings per input (see `Translator.translate`)."""
        search_keywords = {k: kwargs.pop(k) for k in list(kwargs) if k in KEYWORD_DEFAULTS}
        search = take_search_keywords("translate", search_keywords, search, GreedySearch())
        return Translator(self, search, **kwargs).translate(texts, n_best=n_best)

    # ---------------------------------------------------------------- distribution
    @staticmethod
    def get_layout_map(
        device_mesh: keras.distribution.DeviceMesh, model_parallel_dim_name: str = "model"
    ) -> keras.distribution.LayoutMap:
        """The `keras.distribution.LayoutMap` that shards the embedding tables and the
        vocabulary projection along the vocabulary over `model_parallel_dim_name` (other
        weights replicated), for `keras.distribution.ModelParallel`; see
        `keras_attention.models.layout.get_layout_map`."""
        return get_layout_map(device_mesh, model_parallel_dim_name)

    # ---------------------------------------------------------------- serialization
    def get_config(self) -> dict:
        if self._config is None:  # composed: the parts, serialised, and the model's own ids
            config = {
                "name": self.name,
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "decoder": keras.saving.serialize_keras_object(self.decoder),
                "start_id": self.start_id,
                "end_id": self.end_id,
            }
            if self.oov_id is not None:
                config["oov_id"] = self.oov_id
        else:
            config = {"name": self.name, **self._config}
        for key in ("source_tokenizer", "target_tokenizer"):
            tokenizer = getattr(self, key)
            config[key] = (
                None if tokenizer is None else keras.saving.serialize_keras_object(tokenizer)
            )
        return config

    @classmethod
    def from_config(cls, config: dict):
        # Files saved up to 0.2 say `attention_dim`, `encoder_layers`, ...: the same options
        # under their old names, loaded silently.
        config = copy.deepcopy(config)
        for old, new in RENAMED.items():
            config = rename_config_key(config, old, new)
        for key in ("source_tokenizer", "target_tokenizer"):
            if config.get(key) is not None:
                import keras_attention.text  # noqa: F401  (registers the tokenizer classes)

                config[key] = keras.saving.deserialize_keras_object(config[key])
        for key in ("encoder", "decoder"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        model = cls(**config)
        # Built here, before Keras loads the weights: a `.keras` file whose `build_config` is
        # missing (or records a wrong `input_shape`) would otherwise load with no variables
        # and no error, its weights silently dropped, and decode with random ones.
        model.build_from_config(None)
        return model

    def build_from_config(self, config: Any) -> None:
        """Build for any batch size and lengths: the weights' shapes depend on the model's
        configuration only, so the `input_shape` a file records is not needed (nor trusted)."""
        if not self.built:
            self.build(_ANY_SHAPE)


def _check_parts(encoder: Any, decoder: Any, options: dict) -> tuple:
    """Check that `encoder` and `decoder` are the two parts, that no part option was given
    beside them, and that they fit each other; returns their vocabulary sizes."""
    for name, part, cls in (
        ("encoder", encoder, Seq2SeqEncoder),
        ("decoder", decoder, Seq2SeqDecoder),
    ):
        if part is None:
            other, given = ("decoder", decoder) if name == "encoder" else ("encoder", encoder)
            raise ValueError(
                f"A composed Seq2Seq takes both parts: give `{name}` with `{other}`. "
                f"Received: {name}=None, {other}={type(given).__name__}"
            )
        if not isinstance(part, cls):
            raise TypeError(
                f"`{name}` must be a keras_attention.models.{cls.__name__}. "
                f"Received: {name}={part!r}"
            )
    given = {k: v for k, v in options.items() if not _same(v, PART_OPTIONS[k])}
    if given:
        key, value = next(iter(given.items()))
        raise ValueError(
            f"`{key}` is an option of the parts, not of a Seq2Seq given `encoder` and "
            f"`decoder`: set it on the Seq2SeqEncoder / Seq2SeqDecoder. Received: "
            f"{key}={value!r}"
        )
    memory_dim = encoder.output_dim
    if decoder.attention == "luong" and str(decoder.score_mode).lower() == "dot":
        if memory_dim != decoder.units:
            raise ValueError(
                "The decoder's score_mode='dot' compares its state (`decoder.units`) with the "
                "encoder outputs (`encoder.units`, doubled when `encoder.bidirectional`), so "
                f"their sizes must match. Received: decoder.units={decoder.units}, "
                f"encoder.units={encoder.units}, encoder.bidirectional={encoder.bidirectional} "
                f"(encoder outputs of size {memory_dim})"
            )
    if decoder.state_handover == "copy":
        if memory_dim != decoder.units or encoder.rnn != decoder.rnn:
            raise ValueError(
                "The decoder's state_handover='copy' starts it from the encoder's final states "
                "as they are: the same `rnn` and a state of the decoder's size. Received: "
                f"encoder.rnn={encoder.rnn!r}, decoder.rnn={decoder.rnn!r}, encoder state size "
                f"{memory_dim}, decoder.units={decoder.units} (use state_handover='dense')"
            )
    return encoder.vocabulary_size, decoder.vocabulary_size


def _same(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def _part_size(name: str, given: Any, size: int, part: str) -> int:
    """A vocabulary size given beside the parts must be the part's."""
    if given is not None and given != size:
        raise ValueError(
            f"`{name}` must be the {part}'s `vocabulary_size` ({size}) when the {part} is "
            f"given. Received: {name}={given!r}, {part}.vocabulary_size={size}"
        )
    return size


def _check_dot_sizes(attention, score_mode, units: int, encoder_units: int, bidirectional) -> None:
    """Luong's dot score compares the decoder state with the encoder outputs: equal sizes."""
    memory_dim = encoder_units * (2 if bidirectional else 1)
    is_luong = str(attention).lower() == "luong"
    if is_luong and str(score_mode).lower() == "dot" and memory_dim != units:
        raise ValueError(
            "score_mode='dot' compares the decoder state (`units`) with the encoder outputs "
            "(`encoder_units`, doubled when `bidirectional`), so their sizes must match. "
            f"Received: units={units}, encoder_units={encoder_units}, "
            f"bidirectional={bool(bidirectional)} (encoder outputs of size {memory_dim}); "
            f"use encoder_units={units // 2 if bidirectional else units} or "
            "score_mode='general'"
        )


def _vocabulary_size(name: str, value: Any, tokenizer: Any) -> int:
    if value is None:
        if tokenizer is None:
            raise ValueError(
                f"Give `{name}` or a tokenizer to take it from. Received: {name}=None and no "
                "tokenizer"
            )
        value = tokenizer.vocabulary_size
    return check_int(name, value, minimum=1)


def _check_oov_id(oov_id: Any, source_size: int, target_size: int) -> int | None:
    oov_id = check_int("oov_id", oov_id, minimum=0, allow_none=True)
    if oov_id is not None and oov_id >= min(source_size, target_size):
        raise ValueError(
            "`oov_id` must be an id of both vocabularies, in [0, "
            f"{min(source_size, target_size)}). Received: oov_id={oov_id}"
        )
    return oov_id


def _check_ids(source_ids, target_ids) -> tuple:
    """Static checks of the training inputs: rank 2 each, one batch size."""
    for name, ids in (("source_ids", source_ids), ("target_ids", target_ids)):
        if len(ids.shape) != 2:
            raise ValueError(
                f"`{name}` must be a [batch, length] tensor of token ids. Received: "
                f"{name}.shape={tuple(ids.shape)}"
            )
    batches = (source_ids.shape[0], target_ids.shape[0])
    if None not in batches and batches[0] != batches[1]:
        raise ValueError(
            "`source_ids` and `target_ids` must have the same batch size. Received: "
            f"source_ids.shape={tuple(source_ids.shape)}, "
            f"target_ids.shape={tuple(target_ids.shape)}"
        )
    return source_ids, target_ids


def _split_inputs(inputs: Any, name: str) -> tuple:
    """`(source, target)` from `{"source_ids", "target_ids"}` or a pair."""
    if isinstance(inputs, dict):
        missing = [key for key in INPUT_NAMES if key not in inputs]
        if missing:
            raise ValueError(
                f"`{name}` must be a dict with keys {INPUT_NAMES}. Received keys: {sorted(inputs)}"
            )
        return inputs["source_ids"], inputs["target_ids"]
    if isinstance(inputs, (list, tuple)) and len(inputs) == 2:
        return inputs[0], inputs[1]
    raise ValueError(
        f"`{name}` must be a dict {{'source_ids': ..., 'target_ids': ...}} or a pair "
        f"(source_ids, target_ids). Received: {type(inputs).__name__}"
    )
