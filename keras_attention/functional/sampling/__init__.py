"""Drawing tokens from logits: temperature, top-k and nucleus filtering, a stateless generator.

Shared by `sample_search` and by scheduled sampling in `AttentionRNN`. One module per concern:

- `reference.py`, the reference draw: `filter_logits` (temperature, then the top-k cut, then
  the nucleus cut, found by bisection), `gumbel_tokens` (the Gumbel-max draw over all V with
  one uniform per token), `draw_tokens` (inverse CDF, one uniform per row) and
  `argmax_tokens`.
- `fast.py`, the fast draw: `sample_tokens`, the ids of `gumbel_tokens` (or, without top-k,
  the same distribution) from the uniforms of the tokens that can win only; what
  `sample_search` runs.
- `rng.py`, the stateless generator: `step_uniforms` and `token_uniforms`, uniforms in (0, 1)
  from an integer hash of (seed, step, row, token), the same on every backend and compiler.

The argument checks (`check_sampling`, `check_seed`, `check_sampling_used` and the bounds
`MIN_TEMPERATURE`, `MAX_TEMPERATURE`, `MIN_TOP_P`, `MAX_SEED`) live with the package's other
checks in `keras_attention._validation` and are re-exported here. Everything is float32
`keras.ops`; the draw itself is deterministic given the uniforms.
"""

# (`X as X`: public names kept importable from here, outside `__all__` as they were before the
# split: the bounds, the top-k methods and `seed_tensor`.)
from keras_attention._validation import MAX_SEED as MAX_SEED
from keras_attention._validation import MAX_TEMPERATURE as MAX_TEMPERATURE
from keras_attention._validation import MIN_TEMPERATURE as MIN_TEMPERATURE
from keras_attention._validation import MIN_TOP_P as MIN_TOP_P
from keras_attention._validation import (
    check_sampling,
    check_sampling_used,
    check_seed,
)
from keras_attention.functional.sampling.fast import sample_tokens
from keras_attention.functional.sampling.reference import TOP_K_METHODS as TOP_K_METHODS
from keras_attention.functional.sampling.reference import (
    argmax_tokens,
    draw_tokens,
    filter_logits,
    gumbel_tokens,
    nucleus_threshold,
    resolve_top_k_method,
    top_k_threshold,
)
from keras_attention.functional.sampling.rng import seed_tensor as seed_tensor
from keras_attention.functional.sampling.rng import step_uniforms, token_uniforms

__all__ = [
    "argmax_tokens",
    "check_sampling",
    "check_sampling_used",
    "check_seed",
    "draw_tokens",
    "filter_logits",
    "gumbel_tokens",
    "nucleus_threshold",
    "resolve_top_k_method",
    "sample_tokens",
    "step_uniforms",
    "token_uniforms",
    "top_k_threshold",
]
