"""`SearchConfig`: what a decoding search does, as one validated, serialisable value."""

from __future__ import annotations

from typing import Any

import keras

from keras_attention._validation import check_finite, check_flag, check_int
from keras_attention.functional.sampling import check_sampling, check_sampling_used, check_seed

__all__ = ["SearchConfig"]

#: The options of a search and their defaults, in the order of the constructor (the defaults of
#: `Seq2Seq.generate`, `Translator` and `export_saved_model` too).
DEFAULTS = {
    "max_length": 50,
    "beam_width": 1,
    "length_penalty": 0.6,
    "coverage_penalty": 0.0,
    "return_beams": False,
    "sample": False,
    "temperature": 1.0,
    "top_k": None,
    "top_p": None,
    "seed": None,
}


@keras.saving.register_keras_serializable(package="keras_attention")
class SearchConfig:
    """The search that turns a model's step logits into token ids: greedy, beam or sampling.

    One immutable value that `Seq2Seq.generate`, `Translator`, `export_saved_model` and
    `export_litert` take as `search=` and pass on whole, so a search set up once decodes the
    same in Python, in a compiled `Translator` and in an export. It holds what the search
    computes, not how it runs: execution options (`jit_compile`, `pad_to_multiple`,
    `top_k_method`, an export's `max_source_length`) stay arguments of whoever runs it.
    Every option is checked when the value is made, with the checks the old keyword
    arguments use, and combinations the searches cannot honour are refused by name.

    The kind of search follows from the options (`kind`): `sample=True` draws every token
    (`decoding.sample_search`), otherwise `beam_width=1` is greedy search
    (`decoding.greedy_search`) and more is beam search (`decoding.beam_search`).

    Args:
        max_length: The most target tokens generated, the end token included (a `Translator`
            and the exports allow at most 4096). Defaults to `50`.
        beam_width: `1` for greedy search (or sampling), more for beam search. Defaults to
            `1`.
        length_penalty: GNMT alpha of beam search, a finite number. Defaults to `0.6`.
        coverage_penalty: GNMT beta of beam search, `>= 0`; `0` is off. Needs
            `beam_width > 1`. Defaults to `0.0`.
        return_beams: Put beam search's n-best list (`beam_ids`, `beam_scores`,
            `beam_normalized_scores`, `beam_lengths`) in an export's signatures; needs
            `beam_width > 1`. `generate` and `Translator` return the n-best list with every
            beam search (already computed: it costs a Python caller nothing). Defaults to
            `False`.
        sample: Draw every token instead of taking the most probable one; needs
            `beam_width=1`. Defaults to `False`.
        temperature: Sampling temperature in [1e-4, 1e6]; needs `sample=True` unless `1.0`.
            Defaults to `1.0`.
        top_k: Sample among the k most probable tokens (an integer >= 1, at most the
            vocabulary: checked where the model is known); needs `sample=True`. Defaults to
            `None` (all).
        top_p: Nucleus sampling mass in [1e-6, 1]; needs `sample=True`. Defaults to `None`
            (all).
        seed: An integer in [0, 2**31): the seed of `generate`'s draw, or of a `Translator`'s
            stream of per-call seeds; a call's own `seed=` wins, and the exports take the seed
            as an input of their `sample` signatures. Defaults to `None` (fresh seeds).

    Example:

    >>> beam = SearchConfig(max_length=20, beam_width=4, coverage_penalty=0.2)
    >>> beam
    SearchConfig(max_length=20, beam_width=4, coverage_penalty=0.2)
    >>> beam.kind, beam.length_penalty
    ('beam', 0.6)
    >>> SearchConfig.from_config(beam.get_config()) == beam
    True
    >>> beam.replace(beam_width=1, coverage_penalty=0.0).kind
    'greedy'
    >>> SearchConfig(sample=True, top_k=3, seed=7).kind
    'sample'
    """

    __slots__ = tuple(DEFAULTS)

    def __init__(
        self,
        *,
        max_length: int = 50,
        beam_width: int = 1,
        length_penalty: float = 0.6,
        coverage_penalty: float = 0.0,
        return_beams: bool = False,
        sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> None:
        max_length = check_int("max_length", max_length, minimum=1)
        beam_width = check_int("beam_width", beam_width, minimum=1)
        length_penalty = check_finite("length_penalty", length_penalty)
        coverage_penalty = check_coverage_penalty(coverage_penalty)
        return_beams = check_flag("return_beams", return_beams)
        sample = check_flag("sample", sample)
        check_sampling_used(sample, temperature, top_k, top_p)
        if sample and beam_width != 1:
            raise ValueError(
                "`sample=True` draws one sequence per row: it needs beam_width=1. Received: "
                f"beam_width={beam_width}"
            )
        temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
        seed = check_seed(seed)
        if return_beams and beam_width == 1:
            raise ValueError(
                "`return_beams=True` asks for beam search's n-best list: it needs "
                f"beam_width > 1. Received: beam_width={beam_width}"
            )
        if coverage_penalty and beam_width == 1:
            raise ValueError(
                "`coverage_penalty` ranks beam search's hypotheses: it needs beam_width > 1 "
                "(greedy search and sampling would ignore it). Received: "
                f"coverage_penalty={coverage_penalty!r} with beam_width={beam_width}"
            )
        values = (
            max_length, beam_width, length_penalty, coverage_penalty, return_beams,
            sample, temperature, top_k, top_p, seed,
        )  # fmt: skip
        for name, value in zip(DEFAULTS, values):
            object.__setattr__(self, name, value)

    @property
    def kind(self) -> str:
        """`"sample"`, `"beam"` or `"greedy"`: the search these options run."""
        if self.sample:
            return "sample"
        return "beam" if self.beam_width > 1 else "greedy"

    def replace(self, **changes: Any) -> SearchConfig:
        """A new `SearchConfig` with `changes` applied (checked like the constructor's)."""
        unknown = sorted(set(changes) - set(DEFAULTS))
        if unknown:
            raise TypeError(
                f"`SearchConfig` has no option {unknown[0]!r}; its options are "
                f"{list(DEFAULTS)}. Received: {unknown[0]}={changes[unknown[0]]!r}"
            )
        return SearchConfig(**{**self.get_config(), **changes})

    def get_config(self) -> dict:
        """Every option, by name (JSON-serialisable)."""
        return {name: getattr(self, name) for name in DEFAULTS}

    @classmethod
    def from_config(cls, config: dict) -> SearchConfig:
        """The `SearchConfig` of a `get_config` dict (checked like the constructor's)."""
        return cls(**config)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"`SearchConfig` is immutable: use `replace({name}=...)` for a changed copy."
        )

    def __reduce__(self):  # pickle and copy through the config (the value is immutable)
        return (type(self).from_config, (self.get_config(),))

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, SearchConfig):
            return NotImplemented
        return self.get_config() == other.get_config()

    def __hash__(self) -> int:
        return hash(tuple(self.get_config().items()))

    def __repr__(self) -> str:
        shown = {
            name: value
            for name, value in self.get_config().items()
            if name == "max_length" or value != DEFAULTS[name]
        }
        return f"SearchConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def check_coverage_penalty(value: Any) -> float:
    """The GNMT coverage weight: a finite number >= 0, as a Python float."""
    beta = check_finite("coverage_penalty", value)
    if beta < 0:
        raise ValueError(
            "`coverage_penalty` must be >= 0 (a weight; 0 turns it off). Received: "
            f"coverage_penalty={value!r}"
        )
    return beta


def resolve_search(search: Any, keywords: dict, defaults: dict | None = None) -> SearchConfig:
    """The `SearchConfig` of a call that takes `search=` beside the older keyword arguments.

    Without `search`, the keywords make it. With it, the keywords must agree: a keyword left
    at its default (`defaults`, else `SearchConfig`'s) is not read, and any other that differs
    from the config's value is a `ValueError` naming both (one search, said once)."""
    if search is None:
        return SearchConfig(**keywords)
    if not isinstance(search, SearchConfig):
        raise TypeError(
            f"`search` must be a keras_attention.decoding.SearchConfig. Received: search={search!r}"
        )
    for name in given_keywords(keywords, defaults):
        value = keywords[name]
        if _differs(value, getattr(search, name)):
            raise ValueError(
                f"`{name}` disagrees with `search`: give each search option once, in the "
                f"SearchConfig (e.g. `search.replace({name}=...)`) or as a keyword without "
                f"`search`. Received: {name}={value!r} and search={search!r}"
            )
    return search


def given_keywords(keywords: dict, defaults: dict | None = None) -> list:
    """The names in `keywords` whose values are not their defaults (`defaults`, else
    `SearchConfig`'s): the options a caller set."""
    defaults = DEFAULTS if defaults is None else defaults
    return [name for name, value in keywords.items() if _differs(value, defaults[name])]


def _differs(value: Any, other: Any) -> bool:
    if value is other:
        return False
    try:
        return bool(value != other)
    except (TypeError, ValueError):  # an array, a tensor: not a plain option value
        return True
