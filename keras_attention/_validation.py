"""The validation floor: the argument checks every part of the package uses (floor 0).

One policy everywhere:

- An integer is a Python `int` or a NumPy integer scalar (keras-tuner hands out `np.int64`);
  `bool` and `np.bool_` are not integers (a flag is not a count), nor is `2.0`.
- A number (a real) is an integer as above or a Python / NumPy float; `bool` and `np.bool_`
  are not numbers.
- A flag is `True`/`False`, a NumPy `np.bool_`, or the integer 0 or 1 (Python or NumPy:
  keras-tuner's `hp.Choice([True, False])` returns 0/1); it is returned as a Python `bool`.
- Every failure is a `ValueError` that names the argument and the value received
  (`Received: name=value`).

Tensor arguments are checked by their static shape and dtype only (free at run time, fine under
`jit_compile`): `check_rank`, `check_mask`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import keras
import numpy as np

from keras_attention._deprecation import renamed_arguments

NUMERIC_DTYPES = ("int", "uint", "float", "bfloat")


# ---------------------------------------------------------------- the policy
def is_integer(value: Any) -> bool:
    """Whether `value` is an integer under the policy (not a bool, not a float)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_number(value: Any) -> bool:
    """Whether `value` is a real number under the policy (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def is_flag(value: Any) -> bool:
    """Whether `value` is a flag under the policy: a bool (NumPy's too) or the integer 0/1."""
    return isinstance(value, (bool, np.bool_)) or (is_integer(value) and value in (0, 1))


# ---------------------------------------------------------------- checkers
def check_int(
    name: str, value: Any, minimum: int | None = None, allow_none: bool = False
) -> int | None:
    """`value` as a Python int (>= `minimum` when given; `None` passes with `allow_none`),
    else a `ValueError` naming the argument and the value."""
    if value is None and allow_none:
        return None
    if not is_integer(value) or (minimum is not None and value < minimum):
        kind = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}"
        )
        raise ValueError(
            f"`{name}` must be {kind}{' or None' if allow_none else ''}. Received: {name}={value!r}"
        )
    return int(value)


def check_flag(name: str, value: Any) -> bool:
    """A boolean argument as a Python bool (see the policy), else a `ValueError`."""
    if not is_flag(value):
        raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")
    return bool(value)


def check_finite(name: str, value: Any) -> float:
    """A finite number as a Python float, else a `ValueError` naming it."""
    if not is_number(value) or not math.isfinite(float(value)):
        raise ValueError(f"`{name}` must be a finite number. Received: {name}={value!r}")
    return float(value)


def check_rate(name: str, value: Any) -> float:
    """A number in [0, 1) (a dropout rate) as a Python float, else a `ValueError`."""
    if not is_number(value) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value!r}")
    return float(value)


def check_probability(name: str, value: Any, allow_none: bool = False) -> float | None:
    """A number in [0, 1] as a Python float (`None` passes with `allow_none`), else a
    `ValueError`."""
    if value is None and allow_none:
        return None
    if not is_number(value) or not 0 <= value <= 1:
        raise ValueError(
            f"`{name}` must be {'None or ' if allow_none else ''}a probability in [0, 1]. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def check_choice(name: str, value: Any, options: tuple) -> str:
    """`value` lower-cased if it is one of `options`, else a `ValueError` listing them."""
    if not isinstance(value, str) or value.lower() not in options:
        raise ValueError(f"`{name}` must be one of {options}. Received: {name}={value!r}")
    return value.lower()


# ---------------------------------------------------------------- sampling options
#: The sampling temperature's bounds. Below `MIN_TEMPERATURE`, `log_probs / temperature`
#: leaves float32's exact range in the sampler's sums (at 1e-10 XLA drew only padding while
#: eager did not; at 1e-38 both did), and sampling is greedy search in all but rounding: use
#: `sample=False`. Above `MAX_TEMPERATURE` a token banned at the -1e9 logit of the searches
#: (padding, the start token) would come within float32's probability floor of the best
#: token, whose log-probability is at least -ln(V), and could be drawn.
MIN_TEMPERATURE = 1e-4
MAX_TEMPERATURE = 1e6
#: The smallest nucleus mass. The most probable token holds at least 1/V of the mass, so any
#: `top_p <= 1/V` keeps it alone; below this, `top_p * sum` fell to float32 subnormals and
#: zero, and the nucleus kept nothing (only padding was drawn). For top-1 use `top_k=1`.
MIN_TOP_P = 1e-6
#: Seeds are integers in [0, MAX_SEED]: they travel as int32 (a tensor argument of compiled
#: functions and exports), so every entry point takes the same range.
MAX_SEED = 2**31 - 1


@renamed_arguments(vocab_size="vocabulary_size")
def check_sampling(temperature: Any, top_k: Any, top_p: Any, vocabulary_size: Any = None) -> tuple:
    """`(temperature, top_k, top_p)` validated: a `ValueError` names a bad one.

    `temperature` must be in [`MIN_TEMPERATURE`, `MAX_TEMPERATURE`], `top_k` an integer >= 1
    (and at most `vocabulary_size` when that is known: a larger cut keeps every token, which is
    almost surely a mistake), `top_p` in [`MIN_TOP_P`, 1]. The one validator of
    `sample_search`, `generate`, `Translator` and the exports (re-exported as
    `keras_attention.functional.sampling.check_sampling`). `vocabulary_size` was
    `vocab_size` up to 0.2.0 (still accepted, with a `DeprecationWarning`, until 0.4.0)."""
    if (
        not is_number(temperature)
        or not math.isfinite(float(temperature))
        or not MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE
    ):
        raise ValueError(
            f"`temperature` must be a finite number in [{MIN_TEMPERATURE:g}, "
            f"{MAX_TEMPERATURE:g}] (lower is greedy search up to rounding: use sample=False). "
            f"Received: temperature={temperature!r}"
        )
    if top_k is not None and (not is_integer(top_k) or top_k < 1):
        raise ValueError(f"`top_k` must be None or an integer >= 1. Received: top_k={top_k!r}")
    if top_k is not None and vocabulary_size is not None and top_k > vocabulary_size:
        raise ValueError(
            f"`top_k` must be at most the vocabulary size ({vocabulary_size}). "
            f"Received: top_k={top_k!r}"
        )
    if top_p is not None and (not is_number(top_p) or not MIN_TOP_P <= float(top_p) <= 1):
        raise ValueError(
            f"`top_p` must be None or a number in [{MIN_TOP_P:g}, 1] (for the most probable "
            f"token alone use top_k=1). Received: top_p={top_p!r}"
        )
    return (
        float(temperature),
        None if top_k is None else int(top_k),
        None if top_p is None else float(top_p),
    )


def check_seed(seed: Any, allow_none: bool = True) -> int | None:
    """A Python-integer seed in [0, 2**31) (`None` passes with `allow_none`), else a
    `ValueError` naming it. Tensors are not checked here (they are int32 already)."""
    if seed is None and allow_none:
        return None
    if not is_integer(seed) or not 0 <= seed <= MAX_SEED:
        raise ValueError(
            f"`seed` must be {'None or ' if allow_none else ''}an integer in [0, 2**31). "
            f"Received: seed={seed!r}"
        )
    return int(seed)


def check_sampling_used(sample: bool, temperature: Any, top_k: Any, top_p: Any) -> None:
    """A `ValueError` when a sampling option is set but `sample` is off (greedy and beam
    search would ignore it without a word)."""
    if sample:
        return
    given = {"temperature": (temperature, 1.0), "top_k": (top_k, None), "top_p": (top_p, None)}
    for name, (value, default) in given.items():
        if value != default:
            raise ValueError(
                f"`{name}` applies to sampling only: pass sample=True with it. Received: "
                f"{name}={value!r} with sample=False"
            )


# ---------------------------------------------------------------- tensors (static checks)
def check_rank(layer: str, name: str, shape: Any, ranks: tuple) -> None:
    """`shape` has one of `ranks` (2: `[batch, dim]`, 3: `[batch, steps, dim]`)."""
    if len(shape) not in ranks:
        expected = " or ".join({2: "[batch, dim]", 3: "[batch, steps, dim]"}[r] for r in ranks)
        raise ValueError(
            f"`{name}` of layer {layer} must have rank {' or '.join(map(str, ranks))} "
            f"({expected}). Received: {name}.shape={tuple(shape)}"
        )


def dtype_name(x: Any) -> str:
    """The standardized dtype name of `x` (its `str` when Keras cannot read it)."""
    dtype = getattr(x, "dtype", None)
    try:
        return keras.backend.standardize_dtype(dtype)
    except (ValueError, TypeError, AttributeError):
        return str(dtype)


def broadcasts(shape: tuple, target_shape: tuple) -> bool:
    """Whether `shape` broadcasts to `target_shape` (right-aligned; unknown dimensions fit)."""
    return len(shape) <= len(target_shape) and all(
        a is None or b is None or a in (1, b) for a, b in zip(shape[::-1], target_shape[::-1])
    )


def check_mask(name: str, mask, tensor, tensor_name: str) -> None:
    """A mask must be boolean (or 0/1 numbers: non-zero is valid) and have the shape of
    `tensor` without its last axis."""
    if mask is None:
        return
    if not hasattr(mask, "shape"):
        raise ValueError(f"`{name}` must be a boolean tensor or array. Received: {name}={mask!r}")
    dtype = dtype_name(mask)
    if dtype != "bool" and not dtype.startswith(NUMERIC_DTYPES):
        raise ValueError(
            f"`{name}` must be boolean (True on valid positions; numbers are read as "
            f"non-zero = valid). Received: {name}.dtype={dtype}"
        )
    expected = tuple(tensor.shape[:-1])
    got = tuple(mask.shape)
    compatible = len(got) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(got, expected)
    )
    if not compatible:
        raise ValueError(
            f"`{name}` must have the shape of `{tensor_name}` without its last axis, "
            f"{expected}. Received: {name}.shape={got}"
        )
