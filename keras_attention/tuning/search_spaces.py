"""`search_space`: `Seq2Seq` keyword arguments chosen with keras-tuner hyperparameters."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import keras_tuner

from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_int
from keras_attention.models.seq2seq import Seq2Seq

__all__ = ["search_space"]

_UNITS = (32, 64, 128)
_EMBEDDING_DIMS = (16, 32, 64)
_DROPOUTS = (0.0, 0.1, 0.2)
_ATTENTIONS = ("luong", "bahdanau")
_SCORE_MODES = ("dot", "general", "concat")
_ALIGNMENTS = ("global", "local_monotonic", "local_predictive")
_LOCAL_ALIGNMENTS = ("local_monotonic", "local_predictive")
_WINDOW_RADIUS = {"min_value": 2, "max_value": 8, "step": 2, "default": 4}

# Every explicit argument of Seq2Seq can be fixed.
_SEQ2SEQ_ARGUMENTS = tuple(
    name
    for name, parameter in inspect.signature(Seq2Seq.__init__).parameters.items()
    if name != "self" and parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
)
#: Old names of `Seq2Seq` arguments, accepted in `fixed` as `Seq2Seq` accepts them: with a
#: `DeprecationWarning`, until 0.4.0.
_SEQ2SEQ_RENAMES = {"attention_dim": "score_units"}


def search_space(hp: keras_tuner.HyperParameters, **fixed: Any) -> dict[str, Any]:
    """Choose the keyword arguments of a `keras_attention.models.Seq2Seq` with `hp`.

    The space (defaults in bold; `hp` returns the defaults until a tuner sets values):

    | hyperparameter | values | active when |
    |---|---|---|
    | `units` | 32, **64**, 128 | always |
    | `embedding_dim` | 16, **32**, 64 | always |
    | `dropout` | **0.0**, 0.1, 0.2 | always |
    | `attention` | **`"luong"`**, `"bahdanau"` | always |
    | `score_mode` | `"dot"`, **`"general"`**, `"concat"` | `attention == "luong"` |
    | `alignment` | **`"global"`**, `"local_monotonic"`, `"local_predictive"` | Luong |
    | `window_radius` | 2, **4**, 6, 8 (`hp.Int`, step 2) | Luong and a local alignment |
    | `input_feeding` | **True**, False (`hp.Boolean`) | Luong |

    The Luong-only hyperparameters live in `hp.conditional_scope`s: a tuner sees them as
    inactive in Bahdanau trials (and `window_radius` in global ones), and they are left out
    of the returned dict, so `Seq2Seq` keeps its defaults there. Every combination the space
    can produce builds a valid model: `score_mode="dot"` needs keys of the decoder's size,
    so it also sets `encoder_units` to `units // 2` per direction of the (bidirectional)
    encoder (`units` without `bidirectional=False`).

    Args:
        hp: The `keras_tuner.HyperParameters` of the trial.
        **fixed: `Seq2Seq` arguments not to tune: a name of the space is then not registered
            with `hp` (it is a constant of the search, e.g. `units=32`,
            `attention="luong"`); any other `Seq2Seq` argument (`rnn="gru"`,
            `bidirectional=False`, `encoder_units=...`, ...) is passed through. A fixed
            `attention` or `alignment` replaces its conditional scope by a plain choice of
            which hyperparameters exist. `"dot"` is left out of `score_mode` when the fixed
            sizes cannot match (a fixed `encoder_units` needs a fixed `units` equal to the
            memory size).

    Returns:
        A dict of `Seq2Seq` keyword arguments (the tuned ones, `encoder_units` for dot
        scores, then the fixed ones), to complete with vocabulary sizes or tokenizers.

    Raises:
        TypeError: `hp` is not a `keras_tuner.HyperParameters`.
        ValueError: A fixed name is not a `Seq2Seq` argument, or `score_mode="dot"` is
            fixed with sizes that cannot match.

    Example:

    >>> import keras_tuner
    >>> hp = keras_tuner.HyperParameters()
    >>> search_space(hp, units=32)
    ... # doctest: +NORMALIZE_WHITESPACE
    {'units': 32, 'embedding_dim': 32, 'dropout': 0.0, 'attention': 'luong',
     'score_mode': 'general', 'alignment': 'global', 'input_feeding': True}

    A tuner sets the values of each trial (here by hand; the other values stay):

    >>> hp.values.update(score_mode="dot", alignment="local_predictive", window_radius=8)
    >>> search_space(hp, units=32)
    ... # doctest: +NORMALIZE_WHITESPACE
    {'units': 32, 'embedding_dim': 32, 'dropout': 0.0, 'attention': 'luong',
     'score_mode': 'dot', 'alignment': 'local_predictive', 'window_radius': 8,
     'input_feeding': True, 'encoder_units': 16}
    >>> hp.values["attention"] = "bahdanau"
    >>> search_space(hp, units=32, rnn="gru")
    {'units': 32, 'embedding_dim': 32, 'dropout': 0.0, 'attention': 'bahdanau', 'rnn': 'gru'}
    """
    if not isinstance(hp, keras_tuner.HyperParameters):
        raise TypeError(f"`hp` must be a keras_tuner.HyperParameters. Received: hp={hp!r}")
    fixed = renamed_fixed(fixed)
    check_fixed(fixed)
    values: dict[str, Any] = {}

    def tuned(name: str, register: Callable[[], Any]) -> Any:
        values[name] = fixed[name] if name in fixed else register()
        return values[name]

    units = tuned("units", lambda: hp.Choice("units", list(_UNITS), default=64))
    tuned("embedding_dim", lambda: hp.Choice("embedding_dim", list(_EMBEDDING_DIMS), default=32))
    tuned("dropout", lambda: hp.Choice("dropout", list(_DROPOUTS), default=0.0))
    tuned("attention", lambda: hp.Choice("attention", list(_ATTENTIONS), default="luong"))
    with _when(hp, fixed, "attention", ("luong",)) as luong:
        if luong:
            _luong_space(hp, fixed, tuned, values, units)
    values.update(fixed)
    return {name: value for name, value in values.items() if value is not None}


def _luong_space(hp: Any, fixed: dict, tuned: Callable, values: dict, units: int) -> None:
    """The Luong-only part of `search_space`: score mode, alignment (and window), input
    feeding; `dot` scores fix `encoder_units` to match `units`."""
    dot_fits = _dot_fits(fixed)
    modes = [mode for mode in _SCORE_MODES if dot_fits or mode != "dot"]
    score_mode = tuned("score_mode", lambda: hp.Choice("score_mode", modes, default="general"))
    tuned("alignment", lambda: hp.Choice("alignment", list(_ALIGNMENTS), default="global"))
    with _when(hp, fixed, "alignment", _LOCAL_ALIGNMENTS) as local:
        if local:
            tuned("window_radius", lambda: hp.Int("window_radius", **_WINDOW_RADIUS))
    tuned("input_feeding", lambda: hp.Boolean("input_feeding", default=True))
    if score_mode == "dot":
        if not dot_fits:
            raise ValueError(
                "score_mode='dot' needs the decoder's `units` to equal the memory size "
                "(`encoder_units`, times 2 if `bidirectional`): fix `units` to match "
                "or leave `encoder_units` free. Received: "
                + ", ".join(
                    f"{key}={fixed[key]!r}"
                    for key in ("units", "encoder_units", "bidirectional")
                    if key in fixed
                )
            )
        values.setdefault("encoder_units", units // _directions(fixed))


def renamed_fixed(fixed: dict[str, Any]) -> dict[str, Any]:
    """`fixed` with the old names of `Seq2Seq` arguments (`attention_dim`) renamed, each with
    a `DeprecationWarning` (the old and the new name at once: a `ValueError`)."""
    fixed = dict(fixed)
    for old, new in _SEQ2SEQ_RENAMES.items():
        if old in fixed:
            fixed[new] = take_renamed(fixed, "Seq2Seq", old, new, fixed.get(new), stacklevel=3)
    return fixed


def check_fixed(fixed: dict[str, Any], argument: str = "fixed") -> None:
    """A `ValueError` naming the keys of `fixed` that are not `Seq2Seq` arguments."""
    unknown = sorted(set(fixed) - set(_SEQ2SEQ_ARGUMENTS))
    if unknown:
        raise ValueError(
            f"`{argument}` may only hold Seq2Seq arguments ({', '.join(_SEQ2SEQ_ARGUMENTS)}). "
            f"Received unknown: {', '.join(unknown)}"
        )
    for name in ("units", "encoder_units"):
        if fixed.get(name) is not None:
            check_int(name, fixed[name], minimum=1)


@contextlib.contextmanager
def _when(
    hp: keras_tuner.HyperParameters, fixed: dict, parent: str, parent_values: tuple
) -> Iterator[bool]:
    """Whether hyperparameters that need `parent in parent_values` exist: a conditional scope
    when `parent` is tuned (always True: `hp` marks them inactive), a plain test when fixed."""
    if parent in fixed:
        value = fixed[parent]
        yield (value.lower() if isinstance(value, str) else value) in parent_values
    else:
        with hp.conditional_scope(parent, list(parent_values)):
            yield True


def _directions(fixed: dict) -> int:
    return 2 if fixed.get("bidirectional", True) else 1


def _dot_fits(fixed: dict) -> bool:
    """Whether the memory size can equal `units` (dot scores need it)."""
    directions = _directions(fixed)
    if fixed.get("encoder_units") is not None:
        return fixed.get("units") == fixed["encoder_units"] * directions
    units = (fixed["units"],) if "units" in fixed else _UNITS
    return all(u % directions == 0 for u in units)
