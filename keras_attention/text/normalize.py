"""`normalize_text`: the whitespace (and optional case) normalisation every tokenizer applies.

Core TensorFlow string ops only (`RegexReplace`, `StringStrip`, `StringSplit`, `StringLower`,
`StringJoin`, `ReduceJoin`), so graphs that use it load without `tensorflow_text`.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from keras_attention._validation import check_flag

__all__ = ["normalize_text"]

# RE2 for exactly the characters Python's `str.isspace()` accepts: ASCII whitespace (`\s` is
# [\t\n\f\r ]), the Unicode separators \p{Z} (U+00A0, U+2009, U+202F, U+3000, U+2028, ...), and
# the control characters Python also counts as space (\v, U+001C-U+001F, U+0085).
_WHITESPACE = r"[\s\p{Z}\x{0B}\x{1C}-\x{1F}\x{85}]+"


def normalize_text(strings: Any, lowercase: bool = False) -> tf.Tensor:
    """Strip, collapse whitespace to single ASCII spaces and optionally lowercase.

    Every run of whitespace, Unicode spaces included (no-break space U+00A0, narrow no-break
    space U+202F, thin space U+2009, ideographic space U+3000, line separators, tabs and
    newlines: exactly the characters Python's `str.isspace()` accepts), becomes one ASCII
    space; leading and trailing whitespace is removed. For valid UTF-8 input the result equals
    Python's `" ".join(s.split())` (then `.lower()` for the characters on which ICU's and
    Python's lowercase mappings agree). Works element-wise on a string tensor of any shape,
    eagerly and inside `tf.function`.

    Args:
        strings: A `tf.string` tensor (or anything convertible to one, e.g. a list of `str`).
        lowercase: Whether to lowercase with Unicode-aware `tf.strings.lower(...,
            encoding="utf-8")` (so `"ÉCOLE"` becomes `"école"`); a NUL byte is kept as it
            is and does not end the string. Defaults to `False`.

    Returns:
        A `tf.string` tensor of the same shape.

    Example:

    >>> out = normalize_text(["  Hello\\u00a0\\u00a0WORLD \\n", "Caf\\u00c9\\u202fNoir"],
    ...                      lowercase=True)
    >>> [s.decode("utf-8") for s in out.numpy()]
    ['hello world', 'café noir']
    """
    lowercase = check_flag("lowercase", lowercase)
    if not tf.is_tensor(strings):
        try:
            strings = tf.convert_to_tensor(strings, dtype=tf.string)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"`strings` must be a string tensor or a list of strings. Received: "
                f"strings={strings!r:.200}"
            ) from error
    if strings.dtype != tf.string:
        raise TypeError(
            f"`strings` must have dtype tf.string. Received: strings with dtype {strings.dtype}"
        )
    strings = tf.strings.regex_replace(strings, _WHITESPACE, " ")
    strings = tf.strings.strip(strings)
    if lowercase:
        strings = _lower(strings)
    return strings


def _lower(strings: tf.Tensor) -> tf.Tensor:
    """`tf.strings.lower(strings, encoding="utf-8")`, NUL bytes included.

    TensorFlow's `StringLower` treats each string as a C string when it decodes UTF-8: it stops
    at the first NUL byte and drops the rest (`"JU\\x00LY"` became `"ju"`, so a NUL silently
    truncated a request). Each string is therefore split at its NULs, the pieces lowercased,
    and the NULs put back (as tensor data: an op *attribute* such as `reduce_join`'s
    `separator` is cut at a NUL too).
    """
    shape = tf.shape(strings)
    pieces = tf.strings.split(tf.reshape(strings, [-1]), sep="\x00")
    lowered = tf.strings.lower(pieces.flat_values, encoding="utf-8")
    rows = pieces.value_rowids()
    starts = tf.gather(pieces.row_starts(), rows)
    position = tf.range(tf.size(lowered, out_type=rows.dtype)) - starts
    last = tf.equal(position, tf.gather(pieces.row_lengths(), rows) - 1)
    lowered = tf.strings.join([lowered, tf.where(last, "", "\x00")])
    joined = tf.strings.reduce_join(pieces.with_flat_values(lowered), axis=-1)
    return tf.reshape(joined, shape)
