"""SavedModel export of a trained `Seq2Seq` for TF Serving (TensorFlow only)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import keras

#: Ops an exported decoder must not contain: TF Serving has failed on `XlaDynamicUpdateSlice`
#: (left by `ops.slice_update`), and Python-function ops cannot run outside this process.
FORBIDDEN_OPS = frozenset({"XlaDynamicUpdateSlice", "PyFunc", "EagerPyFunc", "PyFuncStateless"})

#: The default `max_source_length` of an export: the most source tokens (characters for a
#: `CharTokenizer`) a request may have. A request's cost grows with its length (the encoder
#: runs over it and every decoder step attends to all of it): one 100,000-character request
#: held a core for 7.4 s. Pass the training data's longest source with a margin instead
#: (`examples/export_for_serving.py` does).
DEFAULT_MAX_SOURCE_LENGTH = 1024
#: A `translate` string longer than this many bytes per allowed token is refused before it is
#: tokenized (a UTF-8 character has at most 4 bytes; the rest is room for whitespace that the
#: normalization collapses), so an enormous request costs no tokenization either.
BYTES_PER_TOKEN = 8


def export_saved_model(
    model: Any,
    path: str | os.PathLike,
    search: Any = None,
    *,
    source_tokenizer: Any = None,
    target_tokenizer: Any = None,
    overwrite: bool = False,
    jit_compile: bool = False,
    verbose: bool = False,
    max_source_length: int | None = DEFAULT_MAX_SOURCE_LENGTH,
    **deprecated: Any,
) -> str:
    """Write a trained `Seq2Seq` (or a `Translator`) as a SavedModel with two to four signatures.

    - `serving_default`: input `source_ids` (int32 `[batch, length]`, 0 = padding, the end
      token included as `text` tokenizers' `tokenize(..., add_end=True)` makes it); outputs
      `ids` int32 `[batch, max_length]` (end token included, 0 after it), `scores` float32
      `[batch]` (sum of log-probabilities), `lengths` int32 `[batch]` and `alignments` float32
      `[batch, max_length, length]`. With a `BeamSearch(return_beams=True)` also the n-best list:
      `beam_ids` `[batch, K, max_length]`, `beam_scores`, `beam_normalized_scores` and
      `beam_lengths` `[batch, K]`, best first.
    - `translate` (when both tokenizers are known): input `inputs` (string `[batch]`); outputs
      `outputs` (string `[batch]`), `scores` and `lengths` (and `beam_outputs` `[batch, K]`
      with `return_beams`). Tokenization runs in the graph; unseen characters/words become the
      unknown token, empty strings decode normally.
    - `sample` (with a `SampleSearch`): inputs `source_ids` and `seed` (int32 scalar); the
      outputs of a greedy `serving_default`, drawn by `sample_search` with the `temperature`,
      `top_k` and `top_p` fixed at export. The same seed gives the same ids on one device.
    - `sample_translate` (with a `SampleSearch` and both tokenizers): inputs `inputs` and
      `seed`; outputs `outputs`, `scores`, `lengths`.

    Batch size and source length are variable, the source length up to `max_source_length`.
    The search of `serving_default` is greedy or beam search, with `max_length` fixed at export
    time (at most `Translator`'s ceiling, 4096). After writing, the op list of the saved
    graphs is checked for `FORBIDDEN_OPS`.

    Hostile requests fail with a clear error (TensorFlow's `InvalidArgumentError`, an HTTP 400
    from TF Serving) and cost almost nothing; the other requests of a server are unaffected:

    - Too long: a request whose source is longer than `max_source_length` tokens is
      **rejected**, not truncated (a cut source would be translated into a wrong answer
      without a word): `source_ids` with more than `max_source_length + 1` columns (the end
      token included, padding counted: it is computed on); a `translate` string of more than
      `max_source_length` tokens, or of more than `BYTES_PER_TOKEN * max_source_length` bytes
      (refused before tokenizing). The whole batch is refused with it: send long requests
      alone.
    - Wrong rank: `source_ids` must be rank 2 and `inputs` rank 1, checked first in the
      graph (TF Serving passes any shape through to it) with an error naming the input, the
      shape received and the shape expected.
    - Wrong dtype: refused by TensorFlow before the graph runs ("expected to be a int32
      tensor but is a int64 tensor").

    Loading: a char-level export (`text.CharTokenizer`) uses core TensorFlow ops only; a
    `text.WordpieceTokenizer` export needs `import tensorflow_text` before
    `tf.saved_model.load` (TF Serving's standard image includes the tf-text ops).

    The searches are `search`: one `keras_attention.decoding` search (`GreedySearch`,
    `BeamSearch` or `SampleSearch`) or a list of two, a `SampleSearch` and one that does not
    sample. A `SampleSearch` gives the `sample` signatures; `serving_default` and `translate`
    then run the other search, or greedy search of the same `max_length`. A `Translator` is
    exported with its whole search, its tokenizers (unless given here) and its model; how the
    export runs (`jit_compile`, `max_source_length`) is this call's, and the seed of a
    `sample` signature is its input (a `SampleSearch`'s `seed` seeds a `Translator`'s calls,
    not an export). The search keywords of 0.2 (`max_length=`, `beam_width=`, `sample=`, ...)
    still work until 0.4.0, with a `DeprecationWarning`: with `sample=True` the beam options
    make `serving_default` and the sampling options the `sample` signatures, as they did.

    Args:
        model: A `keras_attention.models.Seq2Seq` or `Translator`.
        path: The export directory.
        search: The searches (see above). Defaults to `None`: a `Translator`'s search, else
            `GreedySearch()` (`max_length=50`).
        source_tokenizer: Defaults to the model's (or the `Translator`'s).
        target_tokenizer: Defaults to the model's (or the `Translator`'s).
        overwrite: Replace an existing `path`. Defaults to `False` (a `FileExistsError`).
        jit_compile: Mark the search functions for XLA. Defaults to `False` (what every TF
            Serving build can run).
        verbose: Let Keras print the exported variables. Defaults to `False`.
        max_source_length: The most source tokens a request may have (see above), or `None`
            for no limit. Defaults to `DEFAULT_MAX_SOURCE_LENGTH` (1024).
        **deprecated: The search keywords of 0.2 (see above).

    Returns:
        The export path as a string.
    """
    from keras_attention._validation import check_int
    from keras_attention.models import Translator

    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(
            "export_saved_model needs the TensorFlow backend (KERAS_BACKEND=tensorflow). "
            f"Received backend: {keras.backend.backend()}"
        )
    if isinstance(model, Translator):  # its search, tokenizers and model; this call's execution
        search = model.search if search is None else search
        source_tokenizer = model.source_tokenizer if source_tokenizer is None else source_tokenizer
        target_tokenizer = model.target_tokenizer if target_tokenizer is None else target_tokenizer
        model = model.model
    searching, sampling = _export_searches(search, deprecated)
    max_source_length = check_int("max_source_length", max_source_length, 1, allow_none=True)
    translator, sampler = _export_translators(
        model, searching, sampling, source_tokenizer, target_tokenizer, jit_compile
    )
    path = os.fspath(path)
    _clear_path(path, overwrite)
    if not translator.model.built:
        raise ValueError(
            "The model has no weights yet: train it (or call it once) before exporting."
        )
    archive = _export_archive(translator, sampler, max_source_length, jit_compile)
    archive.write_out(path, verbose=verbose)
    _check_forbidden_ops(path)
    return path


def _export_translators(
    model: Any, searching: Any, sampling: Any, source_tokenizer, target_tokenizer, jit_compile
) -> tuple:
    """`(translator, sampler)`: the Translators whose searches the signatures trace (the
    sampler `None` without a sampling search)."""
    from keras_attention.models import Translator

    # `jit_compile` is how this export runs (it picks the sampler's top-k method); the
    # Translators only carry the searches to trace.
    translator = Translator(
        model,
        search=searching,
        jit_compile=jit_compile,
        source_tokenizer=source_tokenizer,
        target_tokenizer=target_tokenizer,
    )
    sampler = None if sampling is None else Translator(model, sampling, jit_compile=jit_compile)
    return translator, sampler


def _check_forbidden_ops(path: str) -> None:
    """Step 3 of writing: refuse an export whose graphs hold one of `FORBIDDEN_OPS`."""
    found = FORBIDDEN_OPS & exported_ops(path)
    if found:
        raise RuntimeError(
            f"The exported graph at {path!r} contains ops TF Serving cannot run: {sorted(found)}"
        )


def _clear_path(path: str, overwrite: bool) -> None:
    """Step 1 of writing: remove an existing `path` if `overwrite`, else refuse it."""
    if os.path.exists(path):
        if not overwrite:
            raise FileExistsError(
                f"`path` already exists: {path!r}. Pass overwrite=True to replace it."
            )
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _export_archive(
    translator: Any, sampler: Any, max_source_length: int | None, jit_compile: bool
) -> keras.export.ExportArchive:
    """Step 2 of writing: the `ExportArchive` tracking the model, with its signatures."""
    import tensorflow as tf

    ids_spec = tf.TensorSpec([None, None], tf.int32, name="source_ids")
    seed_spec = tf.TensorSpec([], tf.int32, name="seed")
    strings_spec = tf.TensorSpec([None], tf.string, name="inputs")
    archive = keras.export.ExportArchive()
    archive.track(translator.model)
    search = _search_function(
        translator, _returns_beams(translator.search), max_source_length, jit_compile
    )
    archive.add_endpoint("serving_default", search, input_signature=[ids_spec])
    if sampler is not None:
        sample_search = _search_function(sampler, False, max_source_length, jit_compile)
        archive.add_endpoint("sample", sample_search, input_signature=[ids_spec, seed_spec])
    if translator.source_tokenizer is not None and translator.target_tokenizer is not None:
        archive.add_endpoint(
            "translate",
            lambda inputs: _strings_of(translator, max_source_length, search, inputs),
            input_signature=[strings_spec],
        )
        if sampler is not None:
            archive.add_endpoint(
                "sample_translate",
                lambda inputs, seed: _strings_of(
                    translator, max_source_length, sample_search, inputs, seed
                ),
                input_signature=[strings_spec, seed_spec],
            )
    return archive


def _search_function(decoder: Any, with_beams: bool, max_source_length, jit_compile: bool):
    """The `tf.function` of a signature on ids: `decoder`'s search behind the input checks."""
    import tensorflow as tf

    from keras_attention.decoding.results import BEAM_RESULT_KEYS, RESULT_KEYS, empty_search_result

    def search(source_ids, seed=0):
        """The search's outputs; an empty batch gets empty outputs (the search's buffer
        scatters reject zero-size tensors)."""
        source_ids = _checked_rank(source_ids, 2, "source_ids")
        if max_source_length is not None:
            source_ids = _checked_length(
                source_ids,
                tf.shape(source_ids)[1],
                max_source_length + 1,
                "`source_ids` is longer than the export allows, "
                f"max_source_length={max_source_length} tokens: received {{}} columns (at most "
                f"{max_source_length + 1}: the tokens and the end token)",
            )
        keys = list(RESULT_KEYS)
        if with_beams:
            keys += [key for key in BEAM_RESULT_KEYS if key != "normalized_scores"]

        def run():
            result = decoder.generate(source_ids, seed)
            return {k: result[k] for k in keys}

        def empty():
            # S of a source with no steps is one padding step (`at_least_one_step`).
            length = tf.maximum(tf.shape(source_ids)[1], 1)
            result = empty_search_result(
                decoder.search.max_length, decoder.search.beam_width, length
            )
            return {k: result[k] for k in keys}

        return tf.cond(tf.shape(source_ids)[0] > 0, run, empty)

    # No AutoGraph: the search has no Python control flow on tensors (its loops are
    # ops.while_loop, the empty-batch branch a tf.cond), and converting the sampling
    # helpers failed ("tf___int32() takes 1 positional argument but 2 were given").
    return tf.function(search, jit_compile=jit_compile, autograph=False)


def _strings_of(translator: Any, max_source_length, search, inputs, *seed) -> dict:
    """A signature on strings: check and tokenize `inputs`, run `search` on the ids,
    detokenize its outputs (and n-best list)."""
    import tensorflow as tf

    source_tok, target_tok = translator.source_tokenizer, translator.target_tokenizer
    inputs = _checked_rank(inputs, 1, "inputs")
    if max_source_length is not None:
        limit = BYTES_PER_TOKEN * max_source_length
        inputs = _checked_length(
            inputs,
            tf.reduce_max(tf.strings.length(inputs)),  # (of no strings: the lowest int)
            limit,
            f"`inputs` is longer than the export allows, max_source_length={max_source_length} "
            "tokens: received a string of {} bytes (more than "
            f"{limit}, {BYTES_PER_TOKEN} a token, are refused before tokenizing)",
        )
    source_ids = tf.cast(source_tok.tokenize(inputs, add_end=True), tf.int32)
    if max_source_length is not None:
        source_ids = _checked_length(
            source_ids,
            tf.shape(source_ids)[1] - 1,
            max_source_length,
            f"`inputs` is longer than the export allows, max_source_length={max_source_length} "
            "tokens: received a string of {} tokens",
        )
    result = search(source_ids, *seed)
    outputs = {
        "outputs": target_tok.detokenize(result["ids"]),
        "scores": result["scores"],
        "lengths": result["lengths"],
    }
    if "beam_ids" in result:
        beams = result["beam_ids"]
        flat = tf.reshape(beams, [-1, translator.search.max_length])
        outputs["beam_outputs"] = tf.reshape(
            target_tok.detokenize(flat), [-1, translator.search.beam_width]
        )
    return outputs


def _export_searches(search: Any, deprecated: dict) -> tuple:
    """`(searching, sampling)`: the search of `serving_default` / `translate` and that of the
    `sample` signatures (or `None`), from `search` (one search or a list of two) or from the
    deprecated keywords (`sample=True` with beam options: the two searches of 0.2)."""
    from keras_attention.decoding.searches import (
        KEYWORD_DEFAULTS,
        GreedySearch,
        Search,
        take_search_keywords,
    )

    unknown = sorted(set(deprecated) - set(KEYWORD_DEFAULTS))
    if unknown:
        raise TypeError(f"export_saved_model() got an unexpected keyword argument {unknown[0]!r}")
    name = "export_saved_model"
    if deprecated.get("sample") and search is None:  # 0.2: beam options + sampling options
        sampling_names = ("sample", "temperature", "top_k", "top_p", "seed")
        beam = {k: v for k, v in deprecated.items() if k not in sampling_names}
        sampling = {k: v for k, v in deprecated.items() if k in sampling_names}
        sampling["max_length"] = deprecated.get("max_length", KEYWORD_DEFAULTS["max_length"])
        search = [take_search_keywords(name, sampling, None, None, stacklevel=3)]
        if set(beam) - {"max_length"}:
            search.insert(0, take_search_keywords(name, beam, None, None, stacklevel=3))
    elif isinstance(search, (list, tuple)):
        if deprecated:
            option = next(iter(deprecated))
            raise ValueError(
                f"`{option}` given beside a list of searches: put the options in the searches. "
                f"Received: {option}={deprecated[option]!r}, search={search!r}"
            )
    else:
        search = [take_search_keywords(name, deprecated, search, GreedySearch(), stacklevel=3)]
    if not 1 <= len(search) <= 2 or not all(isinstance(c, Search) for c in search):
        raise ValueError(
            "`search` must be a search or a list of two (a SampleSearch and one that does not "
            f"sample). Received: search={search!r}"
        )
    samplers = [c for c in search if c.kind == "sample"]
    others = [c for c in search if c.kind != "sample"]
    if len(samplers) > 1 or len(others) > 1:
        raise ValueError(
            "An export holds one search of each kind: `serving_default` runs the one that does "
            "not sample, the `sample` signatures the one that does. Received: "
            f"search={search!r}"
        )
    sampling = samplers[0] if samplers else None
    searching = others[0] if others else GreedySearch(sampling.max_length)
    return searching, sampling


def _returns_beams(search: Any) -> bool:
    """Whether an export's `serving_default` returns the n-best list (`return_beams`)."""
    return search.kind == "beam" and search.return_beams


def _checked_rank(x, rank: int, name: str):
    """`x`, after an in-graph check of its rank. The signature's input spec fixes the rank for
    Python callers, but TF Serving (and a loaded signature) pass any shape through, where it
    failed deep inside the graph ("ConcatOp : Ranks of all input tensors should match"); the
    error now reads "Shape of tensor inputs [1,1] is not compatible with expected shape [?]"."""
    import tensorflow as tf

    # `EnsureShape` checks at run time (an `Assert` on `tf.rank` would be folded away: the
    # rank is known from the spec while tracing, and to Grappler from the signature).
    return tf.ensure_shape(x, [None] * rank, name=f"check_rank_of_{name}")


def _checked_length(x, length, limit: int, template: str):
    """`x`, after an in-graph check that `length` (an int32 scalar) is at most `limit`.

    The refusal's message is one sentence, `template` with the length received in place of
    its `{}`: a client of a loaded export reads `{{function_node
    __inference_signature_wrapper_<lambda>_N}} assertion failed: [<the sentence>]` on the
    error's first line. No op raises an error with a message of its own choosing: `Assert`
    (and the `tf.debugging.assert_*` built on it) prepends "assertion failed: " and writes
    each datum in brackets (the length apart from its words, before), `CheckNumerics` takes a
    message fixed at tracing (no length received), and TensorFlow prefixes any error of a
    function with its name. With a name TensorFlow's Python can parse (a `translate` function,
    not a lambda) it rewrites that prefix into "Graph execution error:" and four lines
    before the message: the endpoints on strings stay lambdas for this."""
    import tensorflow as tf

    message = tf.strings.format(template, length)
    check = tf.debugging.Assert(tf.less_equal(length, limit), [message])
    with tf.control_dependencies([check]):
        return tf.identity(x)


def exported_ops(path: str | os.PathLike) -> set:
    """The op types in a SavedModel's graphs, function library included."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(os.fspath(path), "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        ops.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            ops.update(node.op for node in function.node_def)
    return ops
