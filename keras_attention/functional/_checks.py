"""Static (shape and argument) checks shared by the functional ops. Private.

They read static shapes only, so they cost nothing at run time and work under `jit_compile`;
unknown (`None`) dimensions are accepted.
"""

from __future__ import annotations

from typing import Any

from keras_attention._validation import broadcasts, check_int


def _shape(x: Any) -> tuple:
    return tuple(getattr(x, "shape", ()))


def check_same_size(what: str, a_name: str, a, a_axis: int, b_name: str, b, b_axis: int) -> None:
    """`a.shape[a_axis] == b.shape[b_axis]` when both are known, else a `ValueError`."""
    a_shape, b_shape = _shape(a), _shape(b)
    a_dim = a_shape[a_axis] if len(a_shape) >= abs(a_axis) else None
    b_dim = b_shape[b_axis] if len(b_shape) >= abs(b_axis) else None
    if None not in (a_dim, b_dim) and a_dim != b_dim:
        raise ValueError(
            f"{what}: `{a_name}` and `{b_name}` must agree in size ({a_dim} != {b_dim}). "
            f"Received: {a_name}.shape={a_shape}, {b_name}.shape={b_shape}"
        )


def check_min_rank(name: str, x, rank: int) -> None:
    shape = _shape(x)
    if len(shape) < rank:
        raise ValueError(f"`{name}` must have rank >= {rank}. Received: {name}.shape={shape}")


def check_broadcastable(name: str, x, target_name: str, target) -> None:
    """`x` broadcasts to `target` (right-aligned, known dimensions only), else a `ValueError`."""
    shape, target_shape = _shape(x), _shape(target)
    if not broadcasts(shape, target_shape):
        raise ValueError(
            f"`{name}` must broadcast to the shape of `{target_name}` {target_shape}. "
            f"Received: {name}.shape={shape}"
        )


def check_radius(radius: Any, minimum: int) -> None:
    """A window radius: an integer >= `minimum` (the validation floor's policy)."""
    check_int("radius", radius, minimum)
