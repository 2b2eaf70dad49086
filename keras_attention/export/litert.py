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

#: `export_litert`'s defaults of the deprecated search keywords (its beam width was 4).
_KEYWORD_DEFAULTS = {"max_length": 50, "beam_width": 4, "length_penalty": 0.6}


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
    search: Any = None,
    *,
    source_length: int = 32,
    batch_size: int = 1,
    greedy: bool = True,
    strings: bool = False,
    overwrite: bool = False,
    **deprecated: Any,
) -> dict:
    """Write a trained `Seq2Seq` (or a `Translator`) as a `.tflite` file with its searches.

    Signatures (run with `Interpreter(model_path=path).get_signature_runner(name)`):

    - `"greedy"` (when `greedy=True`) and `"beam"` (when the search is a `BeamSearch`): input
      `source_ids` int32 `[batch_size, source_length]` (0 = padding, the end token included,
      as `text` tokenizers' `tokenize(..., add_end=True)` makes it; right-pad shorter rows with
      0); outputs `ids` int32 `[batch_size, max_length]` (end token included, 0 after it),
      `scores` float32 `[batch_size]` (sum of log-probabilities) and `lengths` int32
      `[batch_size]` — the outputs of `Seq2Seq.generate`. With `return_beams` the
      `"beam"` signature also returns the n-best list: `beam_ids` `[batch_size, K,
      max_length]`, `beam_scores`, `beam_normalized_scores` and `beam_lengths`
      `[batch_size, K]`.

    - `"translate"` (when `strings=True`): strings in, strings out through the model's
      tokenizers, as `export_saved_model`'s signature. LiteRT has no builtin string ops for
      the tokenizers (Unicode decoding, ragged gathers, joins), so this fails today with a
      `LiteRTConversionError` naming them; it is there for runtimes that add them.

    Shapes are fixed at export: the converter lowers the recurrent loops' tensor lists to
    builtin ops only when every element shape is static. Each signature runs
    `Seq2Seq.generate` with its search (greedy search picks tokens with
    `functional.sampling.argmax_tokens`, not Keras' float `argmax`, whose negative-zero fix is
    a `BitwiseAnd` LiteRT has no builtin for). Strings stay outside: the text
    tokenizers' string ops have no LiteRT builtins, so tokenize on the host (the vocabulary is
    in the model's tokenizers) and map ids back.

    A graph the converter cannot lower raises `LiteRTConversionError` naming the ops.

    The search is `search` (a `keras_attention.decoding` `BeamSearch` or `GreedySearch`) or a
    `Translator`'s own. A `BeamSearch` writes the `"beam"` signature with all its options
    (coverage penalty and `return_beams` included) and, with `greedy=True`, a `"greedy"` one
    of the same `max_length`; a `GreedySearch` writes the `"greedy"` signature alone. A
    `SampleSearch` is refused (`ValueError`): LiteRT gets greedy and beam search only.

    Args:
        model: A trained `keras_attention.models.Seq2Seq` or `Translator`.
        path: The `.tflite` file to write.
        search: The search (see above). Defaults to `None`: a `Translator`'s search, else
            `BeamSearch(4)` (`max_length=50`).
        source_length: The (padded) source length of the input. Defaults to `32`.
        batch_size: The batch size of the input. Defaults to `1` (one word at a time, the
            on-device case).
        greedy: Write the `"greedy"` signature. Defaults to `True`.
        strings: Also write a `"translate"` signature on strings (with the search). Defaults
            to `False`.
        overwrite: Replace an existing `path`. Defaults to `False` (a `FileExistsError`).
        **deprecated: The search keywords of 0.2 (`max_length`, `beam_width`,
            `length_penalty`, `coverage_penalty`; `beam_width` defaulted to 4): they still
            make the search, with a `DeprecationWarning`, until 0.4.0.

    Returns:
        A dict: `"path"`, `"bytes"` (the file size) and `"signatures"` (their names).
    """
    from keras_attention._validation import check_int
    from keras_attention.models import Seq2Seq, Seq2SeqEnsemble, Translator

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            "export_litert needs the TensorFlow backend (KERAS_BACKEND=tensorflow). "
            f"Received backend: {keras.backend.backend()}"
        )
    if isinstance(model, Translator):
        search, model = (model.search if search is None else search), model.model
    if not isinstance(model, (Seq2Seq, Seq2SeqEnsemble)):
        raise TypeError(
            "`model` must be a keras_attention Seq2Seq, Seq2SeqEnsemble or Translator. "
            f"Received: model={model!r}"
        )
    if not model.built:
        raise ValueError(
            "The model has no weights yet: train it (or call it once) before exporting."
        )
    source_length = check_int("source_length", source_length, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    search, searches = _litert_searches(search, deprecated, greedy)
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
    module, signatures = _search_module(
        model, searches, search if strings else None, batch_size, source_length
    )
    names = list(signatures)
    flatbuffer = _convert(module, signatures, model)
    with open(path, "wb") as f:
        f.write(flatbuffer)
    return {"path": path, "bytes": len(flatbuffer), "signatures": names}


def _litert_searches(search: Any, deprecated: dict, greedy: bool) -> tuple:
    """`(search, searches)`: the export's search from `search` or the deprecated keywords,
    checked, and the signatures' searches by name (`"greedy"`, `"beam"`)."""
    from keras_attention.decoding.searches import BeamSearch, GreedySearch, take_search_keywords

    search = take_search_keywords(
        "export_litert", deprecated, search, BeamSearch(4), _KEYWORD_DEFAULTS, stacklevel=3
    )
    if search.kind == "sample":
        raise ValueError(
            "export_litert writes greedy and beam search; sampling is not exported to LiteRT "
            "(export_saved_model has `sample` signatures). Received: "
            f"search={search!r}"
        )
    if not greedy and search.kind == "greedy":
        raise ValueError(
            "Nothing to export: greedy=False and a GreedySearch. Received: greedy=False, "
            f"search={search!r}"
        )
    searches = {}
    if greedy:
        searches["greedy"] = GreedySearch(search.max_length)
    if search.kind == "beam":
        searches["beam"] = search
    return search, searches


def _search_module(
    model: Any, searches: dict, strings_search: Any, batch_size: int, source_length: int
) -> tuple:
    """`(module, signatures)`: a `tf.Module` holding the weights and one traced function per
    search (and `"translate"` on strings, searching with `strings_search`, unless `None`),
    and their concrete functions by signature name, in order."""
    import tensorflow as tf

    from keras_attention.decoding.results import BEAM_RESULT_KEYS

    spec = tf.TensorSpec([batch_size, source_length], tf.int32, name="source_ids")

    def run(source_ids, search):
        result = model.generate(source_ids, search=search)
        keys = ["ids", "scores", "lengths"]
        if search.kind == "beam" and search.return_beams:
            keys += [key for key in BEAM_RESULT_KEYS if key != "normalized_scores"]
        return {k: result[k] for k in keys}

    # A plain module holding the variables: saving the Keras model itself would also trace its
    # teacher-forced `call` with these static shapes.
    module = tf.Module()
    module.weights = [variable.value for variable in model.variables]
    signatures = {}
    for name, config in searches.items():
        function = tf.function(_closure(run, config))
        setattr(module, name, function)
        signatures[name] = function.get_concrete_function(spec)
    if strings_search is not None:
        source_tok, target_tok = model.source_tokenizer, model.target_tokenizer

        def translate(inputs):
            ids = tf.cast(source_tok.tokenize(inputs, add_end=True), tf.int32)
            ids = tf.pad(ids, [[0, 0], [0, source_length - tf.shape(ids)[1]]])
            ids = tf.reshape(ids[:, :source_length], [batch_size, source_length])
            result = run(ids, strings_search)
            return {"outputs": target_tok.detokenize(result["ids"]), "scores": result["scores"]}

        module.translate = tf.function(translate)
        signatures["translate"] = module.translate.get_concrete_function(
            tf.TensorSpec([batch_size], tf.string, name="inputs")
        )
    return module, signatures


def _convert(module: Any, signatures: dict, model: Any) -> bytes:
    """The `.tflite` flatbuffer of `module`'s signatures, converted with the builtin ops
    alone through a temporary SavedModel."""
    import tensorflow as tf

    directory = tempfile.mkdtemp(prefix="litert_export_")
    try:
        tf.saved_model.save(module, directory, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(directory, list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            return converter.convert()
        except Exception as error:  # the converter's ConverterError (not a public type)
            raise _conversion_error(error, model) from None
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _closure(run, search):
    """`run(source_ids, search)` as a function of `source_ids` alone: a SavedModel cannot
    encode a search among a function's arguments (nor a default or a partial's)."""
    return lambda source_ids: run(source_ids, search)


def _conversion_error(error: Exception, model: Any) -> LiteRTConversionError:
    """A `LiteRTConversionError` naming the ops the converter could not lower."""
    text = str(error)
    ops = re.findall(r"TF Select ops: ([\w, ]+)", text)
    names = sorted({name.strip() for group in ops for name in group.split(",") if name.strip()})
    names += sorted(
        set(re.findall(r"failed to legalize operation '(?:tf\.)?(\w+)'", text)) - set(names)
    )
    config = {k: getattr(model.decoder, k) for k in ("rnn", "attention", "score_mode", "alignment")}
    return LiteRTConversionError(
        "LiteRT's builtin ops cannot express this graph: the converter could not lower "
        f"{', '.join(names) if names else 'some ops'} (model {config}). Converter message "
        f"(start): {text.strip()[:300]}",
        names,
    )
