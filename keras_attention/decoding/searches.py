"""The searches, as values: `GreedySearch`, `BeamSearch` and `SampleSearch` (base `Search`).

A search is what turns a model's step logits into token ids. One class per kind, each taking
only its own options, so a combination no search can honour cannot be written down; the value
is passed whole as `search=` to `Seq2Seq.generate`, `Translator` and both exports. The older
keyword arguments (`beam_width=`, `sample=`, ...) of those signatures still work through
`take_search_keywords`, with a `DeprecationWarning`, until `_deprecation.REMOVAL`.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import keras

from keras_attention._deprecation import REMOVAL
from keras_attention._validation import (
    check_finite,
    check_flag,
    check_int,
    check_sampling,
    check_sampling_used,
    check_seed,
)

__all__ = ["BeamSearch", "GreedySearch", "SampleSearch", "Search"]

#: The keyword arguments that described a search before the search classes (0.1.0 to 0.2.x),
#: with their defaults: what `take_search_keywords` accepts, with a `DeprecationWarning`.
KEYWORD_DEFAULTS = {
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


class Search:
    """The base class of the searches: one immutable, validated, serialisable value.

    Make one of its kinds: `GreedySearch`, `BeamSearch` or `SampleSearch`. Every kind has
    `max_length` (the most target tokens generated, the end token included; a `Translator`
    and the exports allow at most 4096) and `beam_width` (the hypotheses kept per row: `1`
    but for beam search). A search holds what it computes, not how it runs: execution options
    (`jit_compile`, `pad_to_multiple`, `top_k_method`, an export's `max_source_length`) stay
    arguments of whoever runs it.
    """

    __slots__ = ()
    #: `"greedy"`, `"beam"` or `"sample"`.
    kind: ClassVar[str] = ""
    #: The options of the kind's constructor and their defaults, in order.
    OPTIONS: ClassVar[dict] = {}
    #: The hypotheses kept per row (a `BeamSearch` sets its own).
    beam_width = 1

    def __init__(self, **options: Any) -> None:
        if type(self) is Search:
            raise TypeError(
                "`Search` is the base class of the searches: make a GreedySearch(), "
                "BeamSearch(beam_width) or SampleSearch() instead."
            )
        for name, value in options.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> Search:
        """A new search of the same kind with `changes` applied (checked like the
        constructor's). Another kind is another class: `BeamSearch(4, max_length=...)`."""
        unknown = sorted(set(changes) - set(self.OPTIONS))
        if unknown:
            raise TypeError(
                f"`{type(self).__name__}` has no option {unknown[0]!r}; its options are "
                f"{list(self.OPTIONS)}. Received: {unknown[0]}={changes[unknown[0]]!r}"
            )
        return type(self)(**{**self.get_config(), **changes})

    def get_config(self) -> dict:
        """Every option, by name (JSON-serialisable)."""
        return {name: getattr(self, name) for name in self.OPTIONS}

    @classmethod
    def from_config(cls, config: dict) -> Search:
        """The search of a `get_config` dict (checked like the constructor's)."""
        return cls(**config)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"`{type(self).__name__}` is immutable: use `replace({name}=...)` for a changed copy."
        )

    def __reduce__(self):  # pickle and copy through the config (the value is immutable)
        return (type(self).from_config, (self.get_config(),))

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Search):
            return NotImplemented
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self.get_config().items()))

    def __repr__(self) -> str:
        shown = [
            f"{name}={getattr(self, name)!r}"
            for name, default in self.OPTIONS.items()
            if name in ("max_length", "beam_width") or getattr(self, name) != default
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


@keras.saving.register_keras_serializable(package="keras_attention")
class GreedySearch(Search):
    """Greedy search: the most probable token at every step (`decoding.greedy_search`).

    Args:
        max_length: The most target tokens generated, the end token included. Defaults to
            `50`.

    Example:

    >>> GreedySearch(max_length=20)
    GreedySearch(max_length=20)
    >>> GreedySearch().kind, GreedySearch().beam_width
    ('greedy', 1)
    """

    __slots__ = ("max_length",)
    kind = "greedy"
    OPTIONS = {"max_length": 50}

    def __init__(self, max_length: int = 50) -> None:
        super().__init__(max_length=check_int("max_length", max_length, minimum=1))


@keras.saving.register_keras_serializable(package="keras_attention")
class BeamSearch(Search):
    """Beam search with GNMT's length and coverage penalties (`decoding.beam_search`).

    Keeps the `beam_width` best hypotheses of each row; `beam_width=1` gives greedy search's
    tokens (through the beam code, with its n-best entries). `generate` and `Translator`
    return the n-best list with every beam search (already computed: it costs a Python caller
    nothing); an export's signatures add it with `return_beams`.

    Args:
        beam_width: The hypotheses kept per row, an integer >= 1. Defaults to `4`.
        max_length: The most target tokens generated, the end token included. Defaults to
            `50`.
        length_penalty: GNMT alpha, a finite number (`0` ranks by raw log-probability).
            Defaults to `0.6`.
        coverage_penalty: GNMT beta, `>= 0` (tfa's `coverage_penalty_weight`); `0` is off.
            Defaults to `0.0`.
        return_beams: Put the n-best list (`beam_ids`, `beam_scores`,
            `beam_normalized_scores`, `beam_lengths`) in an export's signatures. Defaults to
            `False`.

    Example:

    >>> beam = BeamSearch(4, max_length=20, coverage_penalty=0.2)
    >>> beam
    BeamSearch(beam_width=4, max_length=20, coverage_penalty=0.2)
    >>> beam.kind, beam.length_penalty
    ('beam', 0.6)
    >>> BeamSearch.from_config(beam.get_config()) == beam
    True
    >>> beam.replace(beam_width=8).beam_width
    8
    """

    __slots__ = ("beam_width", "max_length", "length_penalty", "coverage_penalty", "return_beams")
    kind = "beam"
    OPTIONS = {
        "beam_width": 4,
        "max_length": 50,
        "length_penalty": 0.6,
        "coverage_penalty": 0.0,
        "return_beams": False,
    }

    def __init__(
        self,
        beam_width: int = 4,
        *,
        max_length: int = 50,
        length_penalty: float = 0.6,
        coverage_penalty: float = 0.0,
        return_beams: bool = False,
    ) -> None:
        super().__init__(
            beam_width=check_int("beam_width", beam_width, minimum=1),
            max_length=check_int("max_length", max_length, minimum=1),
            length_penalty=check_finite("length_penalty", length_penalty),
            coverage_penalty=check_coverage_penalty(coverage_penalty),
            return_beams=check_flag("return_beams", return_beams),
        )


@keras.saving.register_keras_serializable(package="keras_attention")
class SampleSearch(Search):
    """Sampling: every token drawn from the model's distribution (`decoding.sample_search`).

    Args:
        max_length: The most target tokens generated, the end token included. Defaults to
            `50`.
        temperature: Sampling temperature in [1e-4, 1e6]. Defaults to `1.0`.
        top_k: Sample among the k most probable tokens (an integer >= 1, at most the
            vocabulary: checked where the model is known). Defaults to `None` (all).
        top_p: Nucleus sampling mass in [1e-6, 1]. Defaults to `None` (all).
        seed: An integer in [0, 2**31): the seed of `generate`'s draw, or of a `Translator`'s
            stream of per-call seeds; a call's own `seed=` wins, and the exports take the seed
            as an input of their `sample` signatures. Defaults to `None` (fresh seeds).

    Example:

    >>> SampleSearch(max_length=20, top_k=3, seed=7)
    SampleSearch(max_length=20, top_k=3, seed=7)
    >>> SampleSearch().kind
    'sample'
    """

    __slots__ = ("max_length", "temperature", "top_k", "top_p", "seed")
    kind = "sample"
    OPTIONS = {"max_length": 50, "temperature": 1.0, "top_k": None, "top_p": None, "seed": None}

    def __init__(
        self,
        *,
        max_length: int = 50,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> None:
        temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
        super().__init__(
            max_length=check_int("max_length", max_length, minimum=1),
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=check_seed(seed),
        )


def check_coverage_penalty(value: Any) -> float:
    """The GNMT coverage weight: a finite number >= 0, as a Python float."""
    beta = check_finite("coverage_penalty", value)
    if beta < 0:
        raise ValueError(
            "`coverage_penalty` must be >= 0 (a weight; 0 turns it off). Received: "
            f"coverage_penalty={value!r}"
        )
    return beta


def check_search(search: Any, default: Search | None = None) -> Search:
    """`search` (a `Search`), or `default` when it is `None`; anything else is a `TypeError`
    naming it (an int here is a call written for the keywords' positional order)."""
    if search is None and default is not None:
        return default
    if not isinstance(search, Search):
        hint = ""
        if isinstance(search, int) and not isinstance(search, bool):
            hint = (
                " (the search options are no longer positional: pass e.g. "
                f"search=GreedySearch(max_length={search}))"
            )
        raise TypeError(
            "`search` must be a keras_attention.decoding search: GreedySearch(), "
            f"BeamSearch(beam_width) or SampleSearch(){hint}. Received: search={search!r}"
        )
    return search


def search_of_keywords(keywords: dict) -> Search:
    """The search the old keyword arguments describe (`KEYWORD_DEFAULTS`' names, any subset):
    `sample=True` is a `SampleSearch`, `beam_width > 1` a `BeamSearch`, else a
    `GreedySearch`. An option the kind would ignore is a `ValueError` naming it, as the
    keywords always were."""
    options = {**KEYWORD_DEFAULTS, **keywords}
    sample = check_flag("sample", options["sample"])
    beam_width = check_int("beam_width", options["beam_width"], minimum=1)
    check_sampling_used(sample, options["temperature"], options["top_k"], options["top_p"])
    if sample:
        if beam_width != 1:
            raise ValueError(
                "`sample=True` draws one sequence per row: it needs beam_width=1. Received: "
                f"beam_width={beam_width}"
            )
        for name in ("coverage_penalty", "return_beams"):
            if options[name] != KEYWORD_DEFAULTS[name]:
                raise ValueError(
                    f"`{name}` applies to beam search only (beam_width > 1). Received: "
                    f"{name}={options[name]!r} with sample=True"
                )
        return SampleSearch(
            **{k: options[k] for k in ("max_length", "temperature", "top_k", "top_p", "seed")}
        )
    if beam_width > 1:
        return BeamSearch(
            beam_width,
            **{
                k: options[k]
                for k in ("max_length", "length_penalty", "coverage_penalty", "return_beams")
            },
        )
    if options["return_beams"]:
        raise ValueError(
            "`return_beams=True` asks for beam search's n-best list: it needs beam_width > 1. "
            "Received: beam_width=1"
        )
    if options["coverage_penalty"]:
        raise ValueError(
            "`coverage_penalty` ranks beam search's hypotheses: it needs beam_width > 1 "
            "(greedy search would ignore it). Received: "
            f"coverage_penalty={options['coverage_penalty']!r} with beam_width={beam_width}"
        )
    check_finite("length_penalty", options["length_penalty"])
    check_seed(options["seed"])
    return GreedySearch(options["max_length"])


def take_search_keywords(
    owner: str,
    kwargs: dict,
    search: Any,
    default: Search,
    keyword_defaults: dict | None = None,
    stacklevel: int = 2,
) -> Search:
    """The search of a call that takes `search=` and, deprecated, the old keyword arguments.

    Pops the old keywords (`KEYWORD_DEFAULTS`' names) out of `kwargs`; any other name left
    there is a `TypeError`, as for any function. With none given, `search` (or `default`).
    With some, a `DeprecationWarning` that shows the `search=` to write instead, and the
    search they describe (missing ones take `keyword_defaults`, the call's old defaults,
    else `KEYWORD_DEFAULTS`); `search` given as well is a `ValueError` (one search, said
    once). `stacklevel` counts from the caller of `take_search_keywords`."""
    unknown = sorted(set(kwargs) - set(KEYWORD_DEFAULTS))
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    if not kwargs:
        return check_search(search, default)
    given = {name: kwargs.pop(name) for name in list(kwargs)}
    if search is not None:
        name = next(iter(given))
        raise ValueError(
            f"`{name}` is a search option: give it in `search` only, e.g. "
            f"`search.replace({name}=...)`. Received: {name}={given[name]!r} and "
            f"search={search!r}"
        )
    built = search_of_keywords({**(keyword_defaults or {}), **given})
    names = ", ".join(f"{name}=" for name in given)
    warnings.warn(
        f"{owner}({names}...) is deprecated: pass the search whole, as "
        f"{owner}(..., search={built!r}) (keras_attention.decoding). The search keywords will "
        f"be removed in keras_attention {REMOVAL}.",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
    return built
