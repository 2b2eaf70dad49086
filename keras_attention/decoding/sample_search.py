"""Sampling decoding: draw every token from the (temperature-scaled, filtered) model."""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from keras_attention._deprecation import SEARCH_RENAMES, renamed_arguments
from keras_attention._validation import check_int
from keras_attention.decoding.greedy_search import one_path_search
from keras_attention.decoding.step_fn import (
    StepFn,
    check_search_arguments,
    check_tokens,
)
from keras_attention.functional.sampling import (
    check_sampling,
    check_seed,
    resolve_top_k_method,
    sample_tokens,
    seed_tensor,
)

__all__ = ["sample_search"]


@renamed_arguments(**SEARCH_RENAMES)
def sample_search(
    step_fn: StepFn,
    initial_state: Any,
    batch_size: Any,
    start_id: int,
    end_id: int,
    max_length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: Any = None,
    vocabulary_size: int | None = None,
    pad_id: int = 0,
    top_k_method: str = "auto",
) -> dict:
    """Decode by drawing `y_t ~ softmax(log p(· | y_<t) / T)` restricted to top-k / nucleus.

    Filters apply in float32 in the KerasHub order: the temperature `T` first, then the
    `top_k` most probable tokens, then the nucleus (the smallest most-probable-first set whose
    renormalised mass reaches `top_p`); see `sampling.filter_logits`. The random numbers are a
    function of `(seed, t, row, token)` only (`sampling.token_uniforms`, a stateless integer
    hash): a given `seed` gives the same ids on a backend and device, eager or compiled, and
    the seed may be a tensor (an argument of a compiled or exported function). `seed=None`
    draws a fresh seed in Python on every call; inside a function traced once (`tf.function`,
    `jax.jit`) that would be frozen at tracing time, so pass the seed as an argument there
    (`Translator` does).

    Cost: no cumulative sum, and no sort unless asked (`sampling.sample_tokens`). The draw
    is the Gumbel-max trick (`sampling.gumbel_tokens`: one hashed uniform per token, an
    argmax), about what greedy's argmax costs. With `top_k`, the cut and the draw run on
    about k x 16 candidates: the blocks of 16 tokens (V/16 apart) with the k largest maxima
    (found by bisection, the default on TensorFlow, where XLA on CPU makes `ops.top_k` a full
    sort), or `ops.top_k`'s k (`top_k_method="sort"`); only their uniforms are hashed. `top_p` alone
    draws by an exact rejection chain (each round: one Gumbel winner, one pass to test it
    against the nucleus; for p >= 0.5) or, for p < 0.5, a bisection on the logit value
    (`sampling.nucleus_threshold`). The costs: see BENCHMARKS.md §4.
    Ties at a top-k or nucleus boundary are all kept.

    Same step-function protocol, loop (`ops.while_loop` with `maximum_iterations`, early stop
    when every row has ended, compiles under `jit_compile=True`, exports without
    `XlaDynamicUpdateSlice`) and result as `greedy_search`.

    The token-id arguments were called `start_token`, `end_token`, `pad_token` and `vocab_size`
    up to 0.2.0; those keywords still work, with a `DeprecationWarning`, until 0.4.0.

    Args:
        step_fn: `step_fn(tokens [N] int32, state, t) -> (logits [N, V], new_state, weights
            [N, S] or None)`; see `make_step_fn`.
        initial_state: A nested structure of `[B, ...]` tensors (may be empty). With a
            `make_step_fn` step, the wrapped cell's states alone (the encoder's `[h, c]`) are
            completed with the cell's extra states first.
        batch_size: B, an int or a scalar tensor.
        start_id: The token id fed at step 0.
        end_id: The token id that ends a sequence.
        max_length: The most tokens generated per row (the end token included).
        temperature: T in [1e-4, 1e6] (`functional.sampling.MIN_TEMPERATURE`, `MAX_TEMPERATURE`);
            below 1 sharpens, above 1 flattens. Defaults to `1.0`.
        top_k: Sample among the k most probable tokens only, at most `vocabulary_size` when that
            is given. Defaults to `None` (all).
        top_p: Nucleus sampling: among the most probable tokens whose mass reaches `top_p`, in
            [1e-6, 1]. Defaults to `None` (all).
        seed: A Python int in [0, 2**31) or an int32 scalar tensor. Defaults to `None` (a
            fresh seed).
        vocabulary_size: V, to check the token ids before decoding. Defaults to `None` (checked
            against the logits' static shape when it is known).
        pad_id: The id written after the end token. Defaults to `0`.
        top_k_method: How the top-k cut is found: `"bisection"` (no sort; the fast path under
            XLA), `"sort"` (`ops.top_k`: the fast path of TensorFlow without XLA, JAX and
            PyTorch) or `"auto"` (bisection on TensorFlow, a sort elsewhere). The kept set is
            the same. Defaults to `"auto"`.

    Returns:
        A dict: `"ids"` `[B, max_length]` int32 (end token included, `pad_id` after it);
        `"scores"` `[B]` float32, the sum of the log-probabilities of the drawn tokens under
        the unfiltered model (T = 1, no top-k/top-p); `"lengths"` `[B]` int32 (end token
        included); and, when `step_fn` returns attention weights, `"alignments"`
        `[B, max_length, S]` (zero after the end token).

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> logits = np.log(np.array([[0.0, 0.0, 0.1, 0.6, 0.3]], "float32") + 1e-30)
    >>> def step_fn(tokens, state, t):  # the same distribution at every step
    ...     return ops.tile(logits, (ops.shape(tokens)[0], 1)), state, None
    >>> result = sample_search(step_fn, (), batch_size=1000, start_id=1, end_id=2,
    ...                        max_length=3, top_k=2, seed=7)
    >>> sorted(set(ops.convert_to_numpy(result["ids"][:, 0]).tolist()))  # top-2 only
    [3, 4]
    >>> again = sample_search(step_fn, (), batch_size=1000, start_id=1, end_id=2,
    ...                       max_length=3, top_k=2, seed=7)
    >>> bool(ops.all(again["ids"] == result["ids"]))
    True
    """
    max_length = check_int("max_length", max_length, minimum=1)
    if vocabulary_size is not None:
        vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p, vocabulary_size)
    top_k_method = resolve_top_k_method(top_k_method)
    tokens = {"start_id": start_id, "end_id": end_id, "pad_id": pad_id}
    check_tokens(tokens, vocabulary_size)
    check_search_arguments(step_fn, batch_size, 1, start_id)
    if seed is None:
        seed = secrets.randbits(31)
    elif not hasattr(seed, "dtype") or isinstance(seed, np.generic):
        check_seed(seed)  # a Python (or NumPy) integer: in [0, 2**31), as everywhere else
    seed = seed_tensor(seed)

    def choose(t, log_probs):
        # = gumbel_tokens(log_probs, token_uniforms(seed, t, N, V), ...), with less work.
        return sample_tokens(log_probs, seed, t, temperature, top_k, top_p, top_k_method)

    return one_path_search(
        step_fn,
        initial_state,
        batch_size,
        choose,
        start_id=start_id,
        end_id=end_id,
        max_length=max_length,
        vocabulary_size=vocabulary_size,
        pad_id=pad_id,
    )
