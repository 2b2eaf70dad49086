"""`Seq2SeqHyperModel`: a keras-tuner `HyperModel` building compiled `Seq2Seq` models."""

from __future__ import annotations

from typing import Any

import keras
import keras_tuner

from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.tuning.search_spaces import check_fixed, renamed_fixed, search_space

__all__ = ["Seq2SeqHyperModel"]

_LEARNING_RATE = {"min_value": 1e-3, "max_value": 1e-2, "sampling": "log", "default": 3e-3}
_OWN_ARGUMENTS = (
    "source_vocabulary_size", "target_vocabulary_size", "source_tokenizer", "target_tokenizer",
)  # fmt: skip


class Seq2SeqHyperModel(keras_tuner.HyperModel):
    """Builds a compiled `keras_attention.models.Seq2Seq` from `search_space(hp)`.

    `build(hp)` chooses the model's arguments with `search_space(hp, **fixed)`, the
    learning rate with `hp.Float("learning_rate", 1e-3, 1e-2, sampling="log")` (default
    `3e-3`), builds the model's weights and compiles it with `Adam(learning_rate)`,
    `SparseCategoricalCrossentropy(from_logits=True)` (padding is masked) and
    `metrics=["accuracy"]`: search on `"val_accuracy"` or `"val_loss"`, with data from
    `keras_attention.text.pairs_dataset` (or `{"source_ids", "target_ids"}` arrays and
    labels). With tokenizers the models own them, so the best model saved to `.keras`
    translates after `keras.saving.load_model`.

    Args:
        source_vocabulary_size: Source vocabulary size; defaults to `source_tokenizer`'s.
        target_vocabulary_size: Target vocabulary size; defaults to `target_tokenizer`'s.
        source_tokenizer: Optional `keras_attention.text` tokenizer of the source side.
        target_tokenizer: Optional tokenizer of the target side.
        fixed: Optional dict of `Seq2Seq` arguments not to tune (see `search_space`), and
            `"learning_rate"` to fix it. Defaults to `None` (tune the whole space).
        jit_compile: `compile(jit_compile=...)` of every model: `True` (XLA), `False` or
            `"auto"`. Defaults to `True`.
        name: Name of the hypermodel and of the models it builds. Defaults to `"seq2seq"`.
        tunable: Whether keras-tuner may tune the hyperparameters the hypermodel registers.
            Defaults to `True`.

    Example:

    >>> import keras_tuner
    >>> hypermodel = Seq2SeqHyperModel(12, 9, fixed={"units": 16}, jit_compile=False)
    >>> model = hypermodel.build(keras_tuner.HyperParameters())
    >>> model.decoder.attention, model.decoder.units, model.built
    ('luong', 16, True)
    >>> round(float(model.optimizer.learning_rate), 6)
    0.003

    In a search (`tuner.search(train, validation_data=validation, epochs=3)`):

    >>> tuner = keras_tuner.RandomSearch(  # doctest: +SKIP
    ...     hypermodel, objective="val_accuracy", max_trials=8, directory="tuning")
    """

    def __init__(
        self,
        source_vocabulary_size: int | None = None,
        target_vocabulary_size: int | None = None,
        source_tokenizer: Any = None,
        target_tokenizer: Any = None,
        fixed: dict[str, Any] | None = None,
        jit_compile: bool | str = True,
        name: str = "seq2seq",
        tunable: bool = True,
    ) -> None:
        super().__init__(name=name, tunable=tunable)
        for side, size, tokenizer in (
            ("source", source_vocabulary_size, source_tokenizer),
            ("target", target_vocabulary_size, target_tokenizer),
        ):
            if size is None and tokenizer is None:
                raise ValueError(
                    f"Give `{side}_vocabulary_size` or `{side}_tokenizer`. Received: "
                    f"{side}_vocabulary_size=None, {side}_tokenizer=None"
                )
        if fixed is None:
            fixed = {}
        if not isinstance(fixed, dict):
            raise TypeError(f"`fixed` must be a dict or None. Received: fixed={fixed!r}")
        fixed = renamed_fixed(fixed)  # (old names warn once, here, not in every trial)
        own = sorted(set(fixed) & set(_OWN_ARGUMENTS))
        if own:
            raise ValueError(
                f"Pass {', '.join(own)} as arguments of Seq2SeqHyperModel, not in `fixed`. "
                f"Received: fixed with keys {sorted(fixed)}"
            )
        check_fixed({key: value for key, value in fixed.items() if key != "learning_rate"})
        if jit_compile not in (True, False, "auto"):
            raise ValueError(
                "`jit_compile` must be True, False or 'auto'. Received: "
                f"jit_compile={jit_compile!r}"
            )
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.fixed = dict(fixed)
        self.jit_compile = jit_compile

    def build(self, hp: keras_tuner.HyperParameters) -> Seq2Seq:
        """A built and compiled `Seq2Seq` with the hyperparameters of `hp`."""
        fixed = dict(self.fixed)
        learning_rate = fixed.pop("learning_rate", None)
        arguments = search_space(hp, **fixed)
        if learning_rate is None:
            learning_rate = hp.Float("learning_rate", **_LEARNING_RATE)
        model = Seq2Seq(
            source_vocabulary_size=self.source_vocabulary_size,
            target_vocabulary_size=self.target_vocabulary_size,
            source_tokenizer=self.source_tokenizer,
            target_tokenizer=self.target_tokenizer,
            name=self.name,
            **arguments,
        )
        # Weights and optimizer slots now: the tuner counts parameters, and its checkpoints
        # (weights and optimizer state) load into the rebuilt best models in full.
        model.build({"source_ids": (None, None), "target_ids": (None, None)})
        model.compile(
            optimizer=keras.optimizers.Adam(learning_rate),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            jit_compile=self.jit_compile,
        )
        model.optimizer.build(model.trainable_variables)
        return model
