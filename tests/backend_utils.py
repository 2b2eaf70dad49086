"""Backend-neutral test helpers: one way to read, differentiate and compile on every backend.

The suite runs on the Keras backend named by ``KERAS_BACKEND`` (TensorFlow, JAX or PyTorch).
Tests that need more than the forward pass (gradients, compiled functions, float64) use these
helpers instead of ``tf.GradientTape``/``tf.function``/``.numpy()`` so they run unchanged on
all three backends:

- :func:`to_numpy` reads any tensor, variable or nested list/tuple of them as NumPy.
- :func:`float64_supported` / :func:`enable_float64` deal with JAX, which computes in float32
  unless ``jax_enable_x64`` is on.
- :func:`variable` makes a trainable ``keras.Variable`` (a differentiable test input).
- :func:`value_and_grad` differentiates a zero-argument loss with respect to Keras variables
  (``tf.GradientTape`` / ``jax.value_and_grad`` over a ``keras.StatelessScope`` / torch autograd).
- :func:`jit` compiles a function the backend's way (XLA on TensorFlow and JAX).

Example:

    >>> import keras
    >>> import numpy as np
    >>> from tests.backend_utils import value_and_grad, variable
    >>> x = variable(np.array([1.0, 2.0], dtype="float32"))
    >>> loss, (grad,) = value_and_grad(lambda: keras.ops.sum(x * x), [x])
    >>> float(loss), grad.tolist()
    (5.0, [2.0, 4.0])
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
import numpy as np

__all__ = [
    "BACKEND",
    "enable_float64",
    "float64_supported",
    "jit",
    "to_numpy",
    "value_and_grad",
    "variable",
]

BACKEND: str = keras.backend.backend()
"""The Keras backend the suite runs on: ``"tensorflow"``, ``"jax"`` or ``"torch"``."""


def to_numpy(x: Any) -> Any:
    """Any tensor, ``keras.Variable``, array or scalar as a NumPy array.

    Works on every backend: torch tensors that require grad are detached, JAX arrays and
    TensorFlow eager tensors are copied to host. Lists and tuples are converted element by element
    (their type is kept); ``None`` stays ``None``.

    Args:
        x: A tensor, variable, NumPy array, Python number, or a (nested) list/tuple of them.

    Returns:
        ``np.ndarray`` (or the same list/tuple structure of them).
    """
    if x is None:
        return None
    if isinstance(x, list | tuple):
        return type(x)(to_numpy(item) for item in x)
    if isinstance(x, np.ndarray):
        return x
    return np.asarray(keras.ops.convert_to_numpy(x))


def float64_supported() -> bool:
    """Whether float64 tensors are really float64 on this backend right now.

    TensorFlow and PyTorch always compute in float64 when asked. JAX silently computes in float32
    unless ``jax_enable_x64`` is on (globally or inside :func:`enable_float64`).
    """
    if BACKEND != "jax":
        return True
    import jax

    return bool(jax.config.jax_enable_x64)


@contextlib.contextmanager
def enable_float64() -> Iterator[None]:
    """Context in which float64 works on every backend; a no-op except on JAX.

    On JAX it turns ``jax_enable_x64`` on for the duration of the block only (via the
    ``jax.enable_x64`` context), so it does not leak into other tests. Create float64 layers,
    variables and inputs *inside* the block and finish all float64 computation there: outside it,
    JAX computes in float32 again.

    Example:

        >>> import numpy as np
        >>> from tests.backend_utils import enable_float64, to_numpy, variable
        >>> with enable_float64():
        ...     str(to_numpy(variable(np.zeros(2))).dtype)
        'float64'
    """
    if BACKEND != "jax":
        yield
        return
    import jax

    with jax.enable_x64(True):
        yield


def variable(value: Any, dtype: str | None = None, name: str | None = None) -> keras.Variable:
    """A trainable ``keras.Variable`` holding ``value``: a differentiable test input.

    Args:
        value: Initial value (array-like).
        dtype: Variable dtype. Defaults to the dtype of ``value`` when it is a NumPy array or
            backend tensor, else the Keras default float type.
        name: Variable name. Defaults to ``"input"``.
    """
    if dtype is None:
        dtype = getattr(value, "dtype", None)
        dtype = None if dtype is None else keras.backend.standardize_dtype(dtype)
    return keras.Variable(value, dtype=dtype, trainable=True, name=name or "input")


def value_and_grad(
    fn: Callable[[], Any], variables: Sequence[keras.Variable]
) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """The value of a scalar loss and its gradients with respect to Keras variables.

    ``fn`` takes no arguments and computes the loss from the variables (layer weights, variables
    made with :func:`variable`) as a scalar tensor. Layers called by ``fn`` must already be built:
    on JAX the loss is differentiated inside a ``keras.StatelessScope`` that maps each variable to a
    traced value, the way Keras' own JAX trainer does, and new variables cannot be created there.

    Args:
        fn: Zero-argument callable returning a scalar tensor.
        variables: ``keras.Variable`` objects to differentiate with respect to (trainable or not).

    Returns:
        ``(loss, grads)``: the loss as a NumPy scalar, and one NumPy array per variable (``None``
        where the loss does not depend on that variable; JAX returns zeros instead).
    """
    variables = list(variables)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            for var in variables:
                tape.watch(var.value)
            loss = fn()
        grads = tape.gradient(loss, [var.value for var in variables])
        return to_numpy(loss), [to_numpy(grad) for grad in grads]
    if BACKEND == "jax":
        import jax

        def stateless_loss(values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn()

        loss, grads = jax.value_and_grad(stateless_loss)([var.value for var in variables])
        return to_numpy(loss), [to_numpy(grad) for grad in grads]
    if BACKEND == "torch":
        import torch

        tensors = [var.value for var in variables]
        saved = [tensor.requires_grad for tensor in tensors]
        try:
            for tensor in tensors:
                tensor.requires_grad_(True)
            with torch.enable_grad():
                loss = fn()
                grads = torch.autograd.grad(loss, tensors, allow_unused=True)
        finally:
            for tensor, requires_grad in zip(tensors, saved):
                tensor.requires_grad_(requires_grad)
        return to_numpy(loss), [to_numpy(grad) for grad in grads]
    raise NotImplementedError(f"value_and_grad: unsupported Keras backend {BACKEND!r}")


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled the backend's way, for tests that a function traces and compiles.

    - TensorFlow: ``tf.function(fn, jit_compile=True)`` (XLA).
    - JAX: ``jax.jit(fn)`` (XLA). Keras variables read inside ``fn`` are baked in as constants
      at trace time; pass changing values as arguments.
    - PyTorch: ``torch.compile(fn, backend="aot_eager", fullgraph=False)``: TorchDynamo graph
      capture and AOTAutograd tracing without Inductor's C++ code generation, which takes minutes
      on a CPU-only machine and adds nothing to a correctness test.

    Arguments and results are backend tensors; wrap results in :func:`to_numpy` to compare.
    """
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    if BACKEND == "torch":
        import torch

        return torch.compile(fn, backend="aot_eager", fullgraph=False)
    raise NotImplementedError(f"jit: unsupported Keras backend {BACKEND!r}")
