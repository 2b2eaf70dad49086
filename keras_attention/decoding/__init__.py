"""Greedy, sampling and beam search over a step function (e.g. a trained attentional decoder)."""

from keras_attention.decoding.beam_search import (
    beam_search,
    gnmt_coverage_penalty,
    gnmt_length_penalty,
)
from keras_attention.decoding.greedy_search import greedy_search
from keras_attention.decoding.sample_search import sample_search
from keras_attention.decoding.searches import BeamSearch, GreedySearch, SampleSearch, Search
from keras_attention.decoding.step_fn import StepFunction, make_step_fn

__all__ = [
    "BeamSearch",
    "GreedySearch",
    "SampleSearch",
    "Search",
    "StepFunction",
    "beam_search",
    "gnmt_coverage_penalty",
    "gnmt_length_penalty",
    "greedy_search",
    "make_step_fn",
    "sample_search",
]
