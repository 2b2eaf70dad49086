"""Input checks and conversions shared by the tokenizers and `pairs_dataset` (private)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from keras_attention.text.normalize import normalize_text

_ADAPT_BATCH = 1024


def _check_string_items(name: str, items: Any) -> None:
    for index, item in enumerate(items):
        if not isinstance(item, (str, bytes)):
            raise TypeError(
                f"`{name}` must contain only strings. Received: {name}[{index}]={item!r} "
                f"(of type {type(item).__name__})"
            )


def _python_strings(name: str, value: Any) -> list | np.ndarray | None:
    """A list/tuple/numpy array of strings, checked; `None` when `value` is something else."""
    if isinstance(value, (list, tuple)):
        _check_string_items(name, value)
        return list(value)
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(
                f"`{name}` must be a 1-D array of strings. Received: {name} with shape "
                f"{value.shape}"
            )
        if value.dtype.kind == "O":
            _check_string_items(name, value)
        elif value.dtype.kind not in ("U", "S"):
            raise TypeError(
                f"`{name}` must be an array of strings. Received: {name} with dtype {value.dtype}"
            )
        return value
    return None


def string_batch(name: str, strings: Any) -> tf.Tensor:
    """A rank-1 `tf.string` tensor from a list/tuple/numpy array of strings or a string tensor."""
    if isinstance(strings, (str, bytes)):
        raise TypeError(
            f"`{name}` must be a batch of strings (a list, 1-D array or rank-1 tensor), not a "
            f"single string. Received: {name}={strings!r:.200}"
        )
    python = _python_strings(name, strings)
    if python is not None:
        return tf.constant(python, dtype=tf.string)
    if isinstance(strings, tf.RaggedTensor) or not tf.is_tensor(strings):
        raise TypeError(
            f"`{name}` must be a list, 1-D numpy array or rank-1 tf.string tensor of strings. "
            f"Received: {name}={strings!r:.200} (of type {type(strings).__name__})"
        )
    if strings.dtype != tf.string:
        raise TypeError(
            f"`{name}` must have dtype tf.string. Received: {name} with dtype {strings.dtype}"
        )
    if strings.shape.rank is not None and strings.shape.rank != 1:
        raise ValueError(
            f"`{name}` must be rank 1 (a batch of strings). Received: {name} with shape "
            f"{strings.shape}"
        )
    return strings


def normalized_text_dataset(name: str, texts: Any, lowercase: bool) -> tf.data.Dataset:
    """Training text as a dataset of normalised rank-1 string batches (for `adapt`)."""
    if isinstance(texts, tf.data.Dataset):
        spec = texts.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise TypeError(
                f"`{name}` must be a tf.data.Dataset of scalar strings. Received: a dataset "
                f"with element_spec={spec!r}"
            )
        if spec.shape.rank == 0:
            texts = texts.batch(_ADAPT_BATCH)
        elif spec.shape.rank != 1:
            raise ValueError(
                f"`{name}` must be a tf.data.Dataset of scalar strings. Received: a dataset "
                f"with element_spec={spec!r}"
            )
    else:
        if isinstance(texts, (str, bytes)):
            raise TypeError(
                f"`{name}` must be a collection of strings, not a single string. "
                f"Received: {name}={texts!r:.200}"
            )
        strings = string_batch(name, texts)
        if tf.executing_eagerly() and strings.shape[0] == 0:
            raise ValueError(f"`{name}` must not be empty. Received: {name}={texts!r}")
        texts = tf.data.Dataset.from_tensor_slices(strings).batch(_ADAPT_BATCH)
    return texts.map(lambda batch: normalize_text(batch, lowercase=lowercase))


def decoded_strings(dataset: tf.data.Dataset, name: str):
    """Yield the `str` of every element of a dataset of string batches; raise if none."""
    seen = False
    for batch in dataset.as_numpy_iterator():
        for item in batch:
            seen = True
            yield item.decode("utf-8", errors="replace")
    if not seen:
        raise ValueError(f"`{name}` must not be empty. Received: a dataset with no strings")


def id_batch(name: str, ids: Any) -> tf.Tensor:
    """Integer ids `[B, L]` as an int32 tensor, or a clear error."""
    if isinstance(ids, tf.RaggedTensor):
        raise TypeError(
            f"`{name}` must be a dense [batch, length] array of ids (pad with 0). Received: "
            f"a tf.RaggedTensor"
        )
    if not tf.is_tensor(ids):
        try:
            array = np.asarray(ids)
        except ValueError as error:
            raise ValueError(
                f"`{name}` must be a dense [batch, length] array of ids (pad with 0). "
                f"Received: {name}={ids!r:.200}"
            ) from error
        if array.dtype.kind not in ("i", "u"):
            raise TypeError(
                f"`{name}` must be integer token ids. Received: {name}={ids!r:.200} "
                f"(dtype {array.dtype})"
            )
        ids = tf.convert_to_tensor(array)
    if not ids.dtype.is_integer:
        raise TypeError(
            f"`{name}` must be integer token ids. Received: {name} with dtype {ids.dtype}"
        )
    if ids.shape.rank is not None and ids.shape.rank != 2:
        raise ValueError(
            f"`{name}` must have rank 2 ([batch, length]). Received: {name} with shape {ids.shape}"
        )
    return tf.cast(ids, tf.int32)
