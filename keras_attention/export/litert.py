"""LiteRT (TensorFlow Lite) export of a trained `Seq2Seq`: the search inside the graph.

TensorFlow backend only. The `.tflite` file runs in `ai_edge_litert`'s interpreter (the LiteRT
runtime, `pip install ai-edge-litert`) with the builtin ops alone (no Flex / Select-TF ops).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Any

import keras

__all__ = ["LiteRTConversionError", "export_litert"]


class LiteRTConversionError(ValueError):
    """The model's graph uses constructs LiteRT's builtin ops cannot express.

    Attributes:
        ops: The TensorFlow op names the converter could not lower (may be empty when the
            converter gave none).
    """

    def __init__(self, message: str, ops: list[str]) -> None:
        super().__init__(message)
        self.ops = ops


def export_litert(
    model: Any,
    path: str | os.PathLike,
    source_length: int = 32,
    max_length: int = 50,
    beam_width: int = 4,
    length_penalty: float = 0.6,
    batch_size: int = 1,
    greedy: bool = True,
    strings: bool = False,
    overwrite: bool = False,
) -> dict:
    """Write a trained `Seq2Seq` (or a `Translator`) as a `.tflite` file with its searches.

    Signatures (run with `Interpreter(model_path=path).get_signature_runner(name)`):

    - `"greedy"` (when `greedy=True`) and `"beam"` (when `beam_width > 1`): input
      `source_ids` int32 `[batch_size, source_length]` (0 = padding, the end token included,
      as `text` tokenizers' `tokenize(..., add_end=True)` makes it; right-pad shorter rows with
      0); outputs `ids` int32 `[batch_size, max_length]` (end token included, 0 after it),
      `scores` float32 `[batch_size]` (sum of log-probabilities) and `lengths` int32
      `[batch_size]` — the outputs of `Seq2Seq.generate`.

    - `"translate"` (when `strings=True`): strings in, strings out through the model's
      tokenizers, as `export_saved_model`'s signature. LiteRT has no builtin string ops for
      the tokenizers (Unicode decoding, ragged gathers, joins), so this fails today with a
      `LiteRTConversionError` naming them; it is there for runtimes that add them.

    Shapes are fixed at export: the converter lowers the recurrent loops' tensor lists to
    builtin ops only when every element shape is static. Greedy search runs as a one-beam
    beam search (`keras_attention.decoding.beam_search` with `beam_width=1`, which equals
    greedy search): Keras's float `argmax` on TensorFlow contains a `BitwiseAnd` (its
    negative-zero fix) that LiteRT has no builtin for. Strings stay outside: the text
    tokenizers' string ops have no LiteRT builtins, so tokenize on the host (the vocabulary is
    in the model's tokenizers) and map ids back.

    A graph the converter cannot lower raises `LiteRTConversionError` naming the ops.

    Args:
        model: A trained `keras_attention.models.Seq2Seq` or `Translator`.
        path: The `.tflite` file to write.
        source_length: The (padded) source length of the input. Defaults to `32`.
        max_length: The most generated tokens, end token included. Defaults to `50` (a
            `Translator`'s own `max_length` wins when a `Translator` is given).
        beam_width: Beams of the `"beam"` signature; `1` writes no beam signature. Defaults
            to `4` (a `Translator`'s own `beam_width` wins when it is above 1).
        length_penalty: GNMT alpha of the beam search. Defaults to `0.6`.
        batch_size: The batch size of the input. Defaults to `1` (one word at a time, the
            on-device case).
        greedy: Write the `"greedy"` signature. Defaults to `True`.
        strings: Also write a `"translate"` signature on strings (beam search when
            `beam_width > 1`). Defaults to `False`.
        overwrite: Replace an existing `path`. Defaults to `False` (a `FileExistsError`).

    Returns:
        A dict: `"path"`, `"bytes"` (the file size) and `"signatures"` (their names).
    """
    import tensorflow as tf

    from keras_attention._validation import check_finite, check_int
    from keras_attention.decoding import beam_search
    from keras_attention.models import Seq2Seq, Translator

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            "export_litert needs the TensorFlow backend (KERAS_BACKEND=tensorflow). "
            f"Received backend: {keras.backend.backend()}"
        )
    if isinstance(model, Translator):
        max_length = model.max_length
        beam_width = model.beam_width if model.beam_width > 1 else beam_width
        length_penalty, model = model.length_penalty, model.model
    if not isinstance(model, Seq2Seq):
        raise TypeError(
            f"`model` must be a keras_attention Seq2Seq or Translator. Received: model={model!r}"
        )
    if not model.built:
        raise ValueError(
            "The model has no weights yet: train it (or call it once) before exporting."
        )
    source_length = check_int("source_length", source_length, minimum=1)
    max_length = check_int("max_length", max_length, minimum=1)
    beam_width = check_int("beam_width", beam_width, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    length_penalty = check_finite("length_penalty", length_penalty)
    if not greedy and beam_width == 1:
        raise ValueError(
            "Nothing to export: greedy=False and beam_width=1. Received: greedy=False, beam_width=1"
        )
    source_tok, target_tok = model.source_tokenizer, model.target_tokenizer
    if strings and (source_tok is None or target_tok is None):
        raise ValueError(
            "strings=True needs the model's source and target tokenizers. Received: "
            f"source_tokenizer={source_tok!r}, target_tokenizer={target_tok!r}"
        )
    path = os.fspath(path)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(
            f"`path` already exists: {path!r}. Pass overwrite=True to replace it."
        )

    spec = tf.TensorSpec([batch_size, source_length], tf.int32, name="source_ids")

    def search(source_ids, width):
        memory, memory_mask, state = model.encode(source_ids)
        step_fn = model.make_step_fn(memory, memory_mask, width)
        result = beam_search(
            step_fn,
            state,
            batch_size=batch_size,
            start_token=model.start_id,
            end_token=model.end_id,
            max_length=max_length,
            beam_width=width,
            length_penalty=length_penalty,
            vocab_size=model.target_vocabulary_size,
        )
        return {k: result[k] for k in ("ids", "scores", "lengths")}

    # A plain module holding the variables: saving the Keras model itself would also trace its
    # teacher-forced `call` with these static shapes.
    module = tf.Module()
    module.weights = [variable.value for variable in model.variables]
    names = (["greedy"] if greedy else []) + (["beam"] if beam_width > 1 else [])
    signatures = {}
    for name in names:
        width = 1 if name == "greedy" else beam_width
        function = tf.function(lambda source_ids, width=width: search(source_ids, width))
        setattr(module, name, function)
        signatures[name] = function.get_concrete_function(spec)
    if strings:

        def translate(inputs):
            ids = tf.cast(source_tok.tokenize(inputs, add_end=True), tf.int32)
            ids = tf.pad(ids, [[0, 0], [0, source_length - tf.shape(ids)[1]]])
            ids = tf.reshape(ids[:, :source_length], [batch_size, source_length])
            result = search(ids, beam_width)
            return {"outputs": target_tok.detokenize(result["ids"]), "scores": result["scores"]}

        module.translate = tf.function(translate)
        names.append("translate")
        signatures["translate"] = module.translate.get_concrete_function(
            tf.TensorSpec([batch_size], tf.string, name="inputs")
        )

    directory = tempfile.mkdtemp(prefix="litert_export_")
    try:
        tf.saved_model.save(module, directory, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(directory, names)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            flatbuffer = converter.convert()
        except Exception as error:  # the converter's ConverterError (not a public type)
            raise _conversion_error(error, model) from None
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return {"path": path, "bytes": len(flatbuffer), "signatures": names}


def _conversion_error(error: Exception, model: Any) -> LiteRTConversionError:
    """A `LiteRTConversionError` naming the ops the converter could not lower."""
    text = str(error)
    ops = re.findall(r"TF Select ops: ([\w, ]+)", text)
    names = sorted({name.strip() for group in ops for name in group.split(",") if name.strip()})
    names += sorted(
        set(re.findall(r"failed to legalize operation '(?:tf\.)?(\w+)'", text)) - set(names)
    )
    config = {k: model.get_config()[k] for k in ("rnn", "attention", "score_mode", "alignment")}
    return LiteRTConversionError(
        "LiteRT's builtin ops cannot express this graph: the converter could not lower "
        f"{', '.join(names) if names else 'some ops'} (model {config}). Converter message "
        f"(start): {text.strip()[:300]}",
        names,
    )
