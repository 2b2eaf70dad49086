"""Greedy and beam search: stub step functions with hand-checkable answers, a real decoder."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
from keras_attention.decoding import (
    beam_search,
    gnmt_coverage_penalty,
    gnmt_length_penalty,
    greedy_search,
    make_step_fn,
    sample_search,
)
from tests.backend_utils import BACKEND, jit, to_numpy

PAD, START, END = 0, 1, 2

# `jit` is torch.compile on PyTorch: half a minute per search on a CPU.
slow_on_torch = pytest.mark.slow if BACKEND == "torch" else pytest.mark.usefixtures()


def _table_step(table):
    """A step function from probabilities `table[t, previous token, next token]` (t clipped to
    the table); the alignment is the one-hot of the previous token, the state counts steps."""
    log_table = np.log(np.asarray(table, "float32"))
    steps, vocab = log_table.shape[0], log_table.shape[-1]

    def step_fn(tokens, state, t):
        rows = ops.take(log_table, ops.minimum(t, steps - 1), axis=0)
        logits = ops.take(rows, tokens, axis=0)
        return logits, {"count": state["count"] + 1.0}, ops.one_hot(tokens, vocab)

    return step_fn


def _state(batch):
    return {"count": np.zeros((batch, 1), "float32")}


def _np(result):
    return {key: to_numpy(value) for key, value in result.items()}


def _random_table(seed=0, steps=6, vocab=7):
    rng = np.random.default_rng(seed)
    table = rng.uniform(0.05, 1.0, (steps, vocab, vocab)).astype("float32")
    return table / table.sum(-1, keepdims=True)


def _myopic_table():
    """Start -> 3 (p=.6) then 5, 6 or 7 (p=1/3 each) then end; start -> 4 (p=.4) then end."""
    table = np.full((1, 8, 8), 1e-9, "float32")
    table[0, START, 3], table[0, START, 4] = 0.6, 0.4
    table[0, 3, 5:] = 1 / 3
    table[0, 4, END] = table[0, 5:, END] = 1.0
    table[0, END, END] = table[0, PAD, END] = 1.0
    return table


def _short_long_table(max_length=6):
    """Start -> 3 (p=.6) -> end: length 2; start -> 4 (p=.4) -> 4 -> 4 -> 4 -> end: length 5."""
    table = np.full((max_length, 6, 6), 1e-9, "float32")
    table[:, START, 3], table[:, START, 4] = 0.6, 0.4
    table[:, 3, END] = 1.0
    table[:, 4, 4] = 1.0
    table[4:, 4, 4], table[4:, 4, END] = 1e-9, 1.0
    table[:, END, END] = table[:, PAD, END] = table[:, 5, END] = 1.0
    return table


def test_greedy_spells_known_sequence():
    def step_fn(tokens, state, t):  # token t + 3 for three steps, then the end token
        favoured = ops.where(t < 3, t + 3, END)
        return ops.one_hot(ops.full(ops.shape(tokens), favoured), 8) * 4.0, state, None

    result = _np(greedy_search(step_fn, [], 2, START, END, max_length=6))
    np.testing.assert_array_equal(result["ids"], [[3, 4, 5, 2, 0, 0]] * 2)
    np.testing.assert_array_equal(result["lengths"], [4, 4])
    step_log_prob = 4.0 - np.log(np.exp(4.0) + 7.0)
    np.testing.assert_allclose(result["scores"], [4 * step_log_prob] * 2, rtol=1e-6)
    assert "alignments" not in result


def test_greedy_stops_at_end_token_per_row():
    def step_fn(tokens, state, t):  # row b ends at step end_at[b]
        favoured = ops.where(t < state["end_at"][:, 0], t + 3, END)
        return ops.one_hot(favoured, 9) * 4.0, state, ops.one_hot(tokens, 9)

    state = {"end_at": np.array([[1], [3], [9]], "int32")}
    result = _np(greedy_search(step_fn, state, 3, START, END, max_length=5, pad_id=8))
    np.testing.assert_array_equal(
        result["ids"], [[3, 2, 8, 8, 8], [3, 4, 5, 2, 8], [3, 4, 5, 6, 7]]
    )
    np.testing.assert_array_equal(result["lengths"], [2, 4, 5])
    # The alignment of step t is the one-hot of the token fed at t; zero after the end token.
    expected = np.zeros((3, 5, 9), "float32")
    for b, ids in enumerate(result["ids"]):
        fed = [START] + list(ids[:-1])
        for t in range(result["lengths"][b]):
            expected[b, t, fed[t]] = 1.0
    np.testing.assert_array_equal(result["alignments"], expected)


def test_beam_finds_better_sequence_than_myopic_greedy():
    step_fn = _table_step(_myopic_table())
    greedy = _np(greedy_search(step_fn, _state(1), 1, START, END, max_length=4))
    beam = _np(beam_search(step_fn, _state(1), 1, START, END, 4, beam_width=2, length_penalty=0.0))
    np.testing.assert_array_equal(greedy["ids"], [[3, 5, 2, 0]])
    np.testing.assert_allclose(greedy["scores"], [np.log(0.6) + np.log(1 / 3)], rtol=1e-5)
    np.testing.assert_array_equal(beam["ids"], [[4, 2, 0, 0]])
    np.testing.assert_allclose(beam["scores"], [np.log(0.4)], rtol=1e-5)
    assert beam["scores"][0] > greedy["scores"][0]
    np.testing.assert_array_equal(beam["lengths"], [2])


@pytest.mark.parametrize("length_penalty", [0.0, 0.6])
def test_beam_width_one_equals_greedy(length_penalty):
    step_fn = _table_step(_random_table())
    greedy = _np(greedy_search(step_fn, _state(3), 3, START, END, max_length=6))
    beam = _np(
        beam_search(
            step_fn, _state(3), 3, START, END, 6, beam_width=1, length_penalty=length_penalty
        )
    )
    for key in ("ids", "lengths", "alignments"):
        np.testing.assert_array_equal(beam[key], greedy[key])
    np.testing.assert_allclose(beam["scores"], greedy["scores"], rtol=1e-6)


def test_length_penalty_formula_by_hand():
    lengths = np.array([0, 1, 2, 7], "int32")
    np.testing.assert_allclose(
        to_numpy(gnmt_length_penalty(lengths, 0.6)),
        [(5 / 6) ** 0.6, 1.0, (7 / 6) ** 0.6, 2.0**0.6],
        rtol=1e-6,
    )
    np.testing.assert_array_equal(to_numpy(gnmt_length_penalty(lengths, 0.0)), 1.0)


def test_length_penalty_changes_the_winner():
    # "3 end" has log p = log .6 (length 2); "4 4 4 4 end" has log .4 (length 5).
    step_fn = _table_step(_short_long_table())
    short = (np.log(0.6), 2)
    long = (np.log(0.4), 5)
    for alpha, best in ((0.0, short), (2.0, long)):
        result = _np(beam_search(step_fn, _state(1), 1, START, END, 6, 2, length_penalty=alpha))
        lp = ((5 + best[1]) / 6) ** alpha
        np.testing.assert_allclose(result["scores"], [best[0]], rtol=1e-5)
        np.testing.assert_allclose(result["normalized_scores"], [best[0] / lp], rtol=1e-5)
        np.testing.assert_array_equal(result["lengths"], [best[1]])
    # alpha=2: log(.4) / (10/6)^2 = -0.330 beats log(.6) / (7/6)^2 = -0.375.
    assert np.log(0.4) / (10 / 6) ** 2 > np.log(0.6) / (7 / 6) ** 2


def test_finished_beams_stay_frozen():
    step_fn = _table_step(_short_long_table())
    result = _np(beam_search(step_fn, _state(2), 2, START, END, 6, 2, length_penalty=0.0))
    # "3 end" finishes at step 1 and is carried for four more steps with pad at zero cost.
    np.testing.assert_array_equal(result["beam_ids"][0], [[3, 2, 0, 0, 0, 0], [4, 4, 4, 4, 2, 0]])
    np.testing.assert_array_equal(result["beam_ids"][1], result["beam_ids"][0])
    np.testing.assert_allclose(result["beam_scores"], [[np.log(0.6), np.log(0.4)]] * 2, rtol=1e-5)
    np.testing.assert_array_equal(result["beam_lengths"], [[2, 5]] * 2)
    expected = np.zeros((6, 6), "float32")  # alignments: one-hot of the fed token, then zeros
    expected[0, START], expected[1, 3] = 1.0, 1.0
    np.testing.assert_array_equal(result["alignments"][0], expected)


@slow_on_torch
def test_jit_compiled_equals_eager():
    step_fn = _table_step(_random_table(seed=1))

    def run(state):
        return {
            "greedy": greedy_search(step_fn, state, 2, START, END, max_length=6),
            "beam": beam_search(step_fn, state, 2, START, END, 6, beam_width=3),
        }

    eager = run(_state(2))
    jitted = jit(run)(_state(2))
    for search in ("greedy", "beam"):
        assert eager[search].keys() == jitted[search].keys()
        for key, value in eager[search].items():
            np.testing.assert_allclose(
                to_numpy(jitted[search][key]),
                to_numpy(value),
                rtol=1e-5,
                atol=1e-6,
                err_msg=f"{search}/{key}",
            )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_length": 0}, "max_length=0"),
        ({"max_length": 2.5}, "max_length=2.5"),
        ({"end_id": 7}, "end_id=7"),
        ({"start_id": -1}, "start_id=-1"),
        ({"vocabulary_size": 0}, "vocabulary_size=0"),
    ],
)
@pytest.mark.parametrize("search", [greedy_search, beam_search])
def test_bad_arguments(search, kwargs, match):
    args = {"start_id": START, "end_id": END, "max_length": 3, "vocabulary_size": 5}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        search(_table_step(_random_table(vocab=5)), _state(1), 1, **args)


def test_bad_beam_arguments():
    step_fn = _table_step(_random_table(vocab=5))
    with pytest.raises(ValueError, match="beam_width=0"):
        beam_search(step_fn, _state(1), 1, START, END, 3, beam_width=0)
    with pytest.raises(ValueError, match="length_penalty='high'"):
        beam_search(step_fn, _state(1), 1, START, END, 3, length_penalty="high")
    with pytest.raises(ValueError, match="end_id=9"):  # vocabulary size from the logits
        beam_search(step_fn, _state(1), 1, START, 9, 3)
    with pytest.raises(ValueError, match="beam_width=0"):
        make_step_fn(None, None, None, np.ones((1, 2, 3)), beam_width=0)


# ---------------------------------------------------------------- a real (untrained) decoder
VOCAB, BATCH, SOURCE, MAX_LENGTH = 11, 2, 5, 6
REAL_END = 10  # with these weights greedy ends row 0 at step 2 and runs row 1 to MAX_LENGTH


def _decoder():
    """Cell, embedding, projection with weights drawn by NumPy (the same on every backend)."""
    cell = LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention("general"))
    embedding = keras.layers.Embedding(VOCAB, 4)
    dense = keras.layers.Dense(VOCAB)
    rng = np.random.default_rng(0)
    memory = rng.normal(size=(BATCH, SOURCE, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], bool)
    AttentionRNN(cell)(np.zeros((BATCH, 1, 4), "float32"), memory)  # builds the cell
    embedding.build((None,))
    dense.build((None, cell.output_size))
    for layer, scale in ((cell, 1.0), (embedding, 1.0), (dense, 2.0)):
        for w in layer.weights:
            w.assign(scale * rng.normal(size=w.shape).astype("float32"))
    return cell, embedding, dense, memory, mask


def _teacher_forced(cell, embedding, dense, memory, mask, ids):
    """Log-probabilities and alignments `AttentionRNN` gives the sequences `ids` [B, L]."""
    fed = np.concatenate([np.full((ids.shape[0], 1), START), ids[:, :-1]], axis=1)
    outputs, alignments = AttentionRNN(cell, return_attention_scores=True)(
        embedding(fed), memory, memory_mask=mask
    )
    log_probs = ops.log_softmax(ops.cast(dense(outputs), "float32"), axis=-1)
    return to_numpy(log_probs), to_numpy(alignments)


def _check_against_teacher_forced(decoder, ids, lengths, scores, alignments=None):
    log_probs, tf_alignments = _teacher_forced(*decoder, ids)
    for b in range(ids.shape[0]):
        n = lengths[b]
        chosen = log_probs[b, np.arange(n), ids[b, :n]]
        np.testing.assert_allclose(scores[b], chosen.sum(), rtol=1e-4, atol=1e-5)
        if alignments is not None:
            np.testing.assert_allclose(alignments[b, :n], tf_alignments[b, :n], atol=1e-5)
    return log_probs


def test_make_step_fn_greedy_equals_teacher_forced():
    decoder = _decoder()
    cell, embedding, dense, memory, mask = decoder
    step_fn = make_step_fn(cell, embedding, dense, memory, mask)
    state = cell.get_initial_state(BATCH)
    result = _np(greedy_search(step_fn, state, BATCH, START, REAL_END, MAX_LENGTH))
    # One row ends early (the rest is padding), the other runs to max_length.
    np.testing.assert_array_equal(result["lengths"], [3, MAX_LENGTH])
    assert result["ids"][0, 2] == REAL_END and np.all(result["ids"][0, 3:] == PAD)
    assert result["ids"].shape == (BATCH, MAX_LENGTH)
    assert result["alignments"].shape == (BATCH, MAX_LENGTH, SOURCE)
    log_probs = _check_against_teacher_forced(
        decoder, result["ids"], result["lengths"], result["scores"], result["alignments"]
    )
    for b in range(BATCH):  # every greedy token is the argmax of the teacher-forced logits
        n = result["lengths"][b]
        np.testing.assert_array_equal(result["ids"][b, :n], log_probs[b, :n].argmax(-1))
    np.testing.assert_array_equal(result["alignments"][1, :, 3:], 0.0)  # masked memory


def test_make_step_fn_beam_scores_equal_teacher_forced_rescoring():
    decoder = _decoder()
    cell, embedding, dense, memory, mask = decoder
    step_fn = make_step_fn(cell, embedding, dense, memory, mask, beam_width=3)
    state = cell.get_initial_state(BATCH)
    result = _np(beam_search(step_fn, state, BATCH, START, REAL_END, 6, beam_width=3))
    assert result["beam_ids"].shape == (BATCH, 3, 6)
    assert result["alignments"].shape == (BATCH, 6, SOURCE)
    _check_against_teacher_forced(
        decoder, result["ids"], result["lengths"], result["scores"], result["alignments"]
    )
    for k in range(3):  # every beam's state was gathered from its true parent
        _check_against_teacher_forced(
            decoder,
            result["beam_ids"][:, k],
            result["beam_lengths"][:, k],
            result["beam_scores"][:, k],
        )
    normalized = result["beam_scores"] / ((5 + result["beam_lengths"]) / 6) ** 0.6
    assert np.all(np.diff(normalized, axis=1) <= 1e-6)  # best first


@slow_on_torch
def test_make_step_fn_beam_search_jit_compiled_equals_eager():
    cell, embedding, dense, memory, mask = _decoder()

    def run(memory, mask):
        step_fn = make_step_fn(cell, embedding, dense, memory, mask, beam_width=3)
        state = cell.get_initial_state(BATCH)
        return beam_search(step_fn, state, BATCH, START, REAL_END, 6, beam_width=3)

    eager = _np(run(memory, mask))
    jitted = _np(jit(run)(ops.convert_to_tensor(memory), ops.convert_to_tensor(mask)))
    for key, value in eager.items():
        np.testing.assert_allclose(jitted[key], value, rtol=1e-4, atol=1e-5, err_msg=key)


# ---------------------------------------------------------------- coverage penalty and n-best
def _coverage_step():
    """Start -> 3 (p=.6) or 4 (p=.4), then the end token (2) for sure. Alignment over S=2
    source positions, by the token fed: start [.5, .5], 3 [.9, .1], 4 [.5, .5]."""
    table = np.full((1, 6, 6), 1e-9, "float32")
    table[0, START, 3], table[0, START, 4] = 0.6, 0.4
    table[0, 3:, END] = table[0, END, END] = table[0, PAD, END] = 1.0
    aligns = np.full((6, 2), 0.5, "float32")
    aligns[3] = [0.9, 0.1]
    log_table = np.log(table[0])

    def step_fn(tokens, state, t):
        return ops.take(log_table, tokens, axis=0), state, ops.take(aligns, tokens, axis=0)

    return step_fn


def test_coverage_penalty_by_hand():
    # "3 end" covers [.5 + .9, .5 + .1] = [1.4, .6]: cp = beta log .6; "4 end" covers [1, 1]:
    # cp = 0. With alpha = 0, "3 end" ranks (log .6) + beta log .6 and "4 end" log .4: the
    # penalty flips the winner for beta > log .4 / log .6 - 1 = 0.794.
    step_fn = _coverage_step()
    for beta, best in ((0.5, 3), (1.0, 4)):
        result = _np(
            beam_search(
                step_fn, (), 1, START, END, 3, beam_width=2, length_penalty=0.0,
                coverage_penalty=beta,
            )
        )  # fmt: skip
        ranked = {3: np.log(0.6) + beta * np.log(0.6), 4: np.log(0.4)}
        other = 7 - best
        np.testing.assert_array_equal(result["beam_ids"][0, :, 0], [best, other])
        np.testing.assert_allclose(
            result["beam_normalized_scores"][0], [ranked[best], ranked[other]], rtol=1e-5
        )
        probabilities = {3: 0.6, 4: 0.4}
        np.testing.assert_allclose(
            result["beam_scores"][0], np.log([probabilities[best], probabilities[other]]), 1e-5
        )
    # The penalty alone, on a hand example: beta * (log .5 + log 1 + [zero coverage: 0]).
    np.testing.assert_allclose(
        to_numpy(gnmt_coverage_penalty(np.array([[0.5, 1.7, 0.0]], "float32"), 0.2)),
        [0.2 * np.log(0.5)],
        rtol=1e-6,
    )


def test_coverage_penalty_zero_is_todays_beam_search_exactly():
    decoder = _decoder()
    cell, embedding, dense, memory, mask = decoder
    step_fn = make_step_fn(cell, embedding, dense, memory, mask, beam_width=3)
    state = cell.get_initial_state(BATCH)
    plain = _np(beam_search(step_fn, state, BATCH, START, REAL_END, 6, beam_width=3))
    zero = _np(
        beam_search(step_fn, state, BATCH, START, REAL_END, 6, beam_width=3, coverage_penalty=0)
    )
    assert plain.keys() == zero.keys()
    for key in plain:
        np.testing.assert_array_equal(zero[key], plain[key], err_msg=key)


def test_n_best_sorted_distinct_and_rescored_under_teacher_forcing():
    decoder = _decoder()
    cell, embedding, dense, memory, mask = decoder
    k, beta, alpha = 4, 0.3, 0.6
    step_fn = make_step_fn(cell, embedding, dense, memory, mask, beam_width=k)
    state = cell.get_initial_state(BATCH)
    result = _np(
        beam_search(
            step_fn, state, BATCH, START, REAL_END, MAX_LENGTH, beam_width=k,
            length_penalty=alpha, coverage_penalty=beta,
        )
    )  # fmt: skip
    normalized = result["beam_normalized_scores"]
    assert np.all(np.diff(normalized, axis=1) <= 1e-6)  # best first
    np.testing.assert_array_equal(result["ids"], result["beam_ids"][:, 0])
    np.testing.assert_allclose(result["normalized_scores"], normalized[:, 0])
    for b in range(BATCH):  # distinct hypotheses
        hypotheses = {
            tuple(row[:n]) for row, n in zip(result["beam_ids"][b], result["beam_lengths"][b])
        }
        assert len(hypotheses) == k
    for j in range(k):
        ids, lengths = result["beam_ids"][:, j], result["beam_lengths"][:, j]
        # Raw score: the teacher-forced log-probability of the beam.
        _check_against_teacher_forced(decoder, ids, lengths, result["beam_scores"][:, j])
        # Ranking score: / lp, plus beta * cp of the teacher-forced alignments when finished.
        _, alignments = _teacher_forced(*decoder, ids)
        for b in range(BATCH):
            n = lengths[b]
            expected = result["beam_scores"][b, j] / ((5 + n) / 6) ** alpha
            if REAL_END in ids[b, :n]:
                coverage = alignments[b, :n].astype(np.float64).sum(0)
                coverage = np.where(coverage == 0, 1.0, np.minimum(coverage, 1.0))
                expected += beta * np.log(coverage).sum()
            np.testing.assert_allclose(normalized[b, j], expected, rtol=1e-4, atol=1e-5)


def test_bad_coverage_penalty():
    step_fn = _table_step(_random_table(vocab=5))
    with pytest.raises(ValueError, match="coverage_penalty=-0.1"):
        beam_search(step_fn, _state(1), 1, START, END, 3, coverage_penalty=-0.1)
    with pytest.raises(ValueError, match="coverage_penalty='x'"):
        beam_search(step_fn, _state(1), 1, START, END, 3, coverage_penalty="x")

    def no_alignments(tokens, state, t):
        return ops.zeros((ops.shape(tokens)[0], 5)), state, None

    with pytest.raises(ValueError, match="coverage_penalty=0.2"):
        beam_search(no_alignments, (), 1, START, END, 3, coverage_penalty=0.2)


def test_sampled_scores_equal_teacher_forced_rescoring():
    decoder = _decoder()
    cell, embedding, dense, memory, mask = decoder
    step_fn = make_step_fn(cell, embedding, dense, memory, mask)
    state = cell.get_initial_state(BATCH)
    result = _np(
        sample_search(step_fn, state, BATCH, START, REAL_END, MAX_LENGTH, temperature=2.0, seed=3)
    )
    _check_against_teacher_forced(
        decoder, result["ids"], result["lengths"], result["scores"], result["alignments"]
    )
