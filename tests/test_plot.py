"""`plot_alignment`: the image is the weights, ticks are the tokens, bad inputs are named."""

from __future__ import annotations

import sys
import warnings

import keras
import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

from keras_attention.plot import plot_alignment  # noqa: E402

WEIGHTS = np.array([[0.7, 0.2, 0.1, 0.0], [0.0, 0.1, 0.8, 0.1], [0.25, 0.25, 0.25, 0.25]])
SOURCE = ["the", "cat", "sat", "[END]"]
TARGET = ["le", "chat", "[END]"]


def _labels(texts) -> list[str]:
    return [text.get_text() for text in texts]


def test_image_ticks_colorbar_and_png(tmp_path):
    fig = plot_alignment(WEIGHTS, SOURCE, TARGET, title="fr")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), WEIGHTS)
    assert image.get_clim() == (0.0, 1.0)
    assert _labels(ax.get_xticklabels()) == SOURCE
    assert _labels(ax.get_yticklabels()) == TARGET
    assert list(ax.get_xticks()) == [0, 1, 2, 3] and list(ax.get_yticks()) == [0, 1, 2]
    assert all(label.get_rotation() == 90 for label in ax.get_xticklabels())  # words: vertical
    assert ax.get_title() == "fr"
    assert len(fig.axes) == 2  # the heatmap and its colorbar
    path = tmp_path / "alignment.png"
    fig.savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "convert",
    [np.asarray, lambda w: w.tolist(), keras.ops.convert_to_tensor, lambda w: w.astype("float16")],
    ids=["numpy", "lists", "backend-tensor", "float16"],
)
def test_weight_types(convert):
    fig = plot_alignment(convert(WEIGHTS), SOURCE, TARGET)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), WEIGHTS, atol=1e-3)


def test_weights_straight_from_a_layer():
    # A layer's output on any backend (on PyTorch a tensor that requires grad).
    from keras_attention import LuongAttention

    rng = np.random.default_rng(0)
    query = rng.normal(size=(1, 3, 4)).astype("float32")
    value = rng.normal(size=(1, 4, 4)).astype("float32")
    layer = LuongAttention("general")
    _, weights = layer([query, value], return_attention_scores=True)
    fig = plot_alignment(weights[0], SOURCE, TARGET)
    expected = keras.ops.convert_to_numpy(weights)[0]
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), expected)
    np.testing.assert_allclose(expected.sum(-1), 1.0, rtol=1e-6)


def test_token_forms_and_visible_whitespace():
    fig = plot_alignment(np.eye(5)[:3], "a b\tc", np.array([b"x", b"\xc3\xa9", b""], dtype=object))
    ax = fig.axes[0]
    assert _labels(ax.get_xticklabels()) == ["a", "␣", "b", "⇥", "c"]
    assert all(label.get_rotation() == 0 for label in ax.get_xticklabels())  # characters
    assert _labels(ax.get_yticklabels()) == ["x", "é", "∅"]
    fig = plot_alignment([[1.0, 0.0]], ["new\nline", 7], [np.str_("y")])
    assert _labels(fig.axes[0].get_xticklabels()) == ["new↵line", "7"]


def test_string_tensor_tokens():
    tf = pytest.importorskip("tensorflow")
    fig = plot_alignment(np.ones((1, 2)) / 2, tf.constant(["a", "b"]), tf.constant(["c"]))
    assert _labels(fig.axes[0].get_xticklabels()) == ["a", "b"]


def test_draws_into_a_given_axes(tmp_path):
    figure = Figure(figsize=(8, 3))
    left, right = figure.subplots(1, 2)
    returned = plot_alignment(WEIGHTS, SOURCE, TARGET, ax=right, cmap="viridis")
    assert returned is figure
    assert not left.images and right.images[0].get_cmap().name == "viridis"
    assert _labels(right.get_xticklabels()) == SOURCE
    assert len(figure.axes) == 3  # left, right and right's colorbar
    figure.savefig(tmp_path / "two.png")
    assert (tmp_path / "two.png").stat().st_size > 0


def test_literal_dollars_and_missing_glyphs_draw_without_warnings(tmp_path):
    tokens = ["$x$", "$\\frac$", "日本", "ok"]  # mathtext and CJK (absent from DejaVu Sans)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_alignment(np.full((1, 4), 0.25), tokens, ["日"], title="日本語 $5")
        fig.savefig(tmp_path / "cjk.png", bbox_inches="tight")
    assert _labels(fig.axes[0].get_xticklabels()) == tokens
    assert fig.axes[0].get_title() == "日本語 $5"


@pytest.mark.parametrize(
    "weights, error, match",
    [
        (np.ones(4), ValueError, r"`weights` must be a non-empty rank-2.*\(4,\)"),
        (np.ones((1, 3, 4)), ValueError, r"weights\[i\].*\(1, 3, 4\)"),
        (np.ones((0, 4)), ValueError, r"`weights` .*\(0, 4\)"),
        ([[1.0, 0.0], [1.0]], ValueError, r"`weights` must be a rectangular"),
        (np.array([["a", "b"]]), TypeError, r"`weights` must hold numbers.*<U1"),
        ("weights", TypeError, r"`weights` must be a \[T, S\] array.*'weights'"),
        (None, TypeError, r"`weights` .*weights=None"),
        (object(), TypeError, r"`weights` .*type object"),
    ],
)
def test_bad_weights(weights, error, match):
    with pytest.raises(error, match=match):
        plot_alignment(weights, SOURCE, TARGET)


@pytest.mark.parametrize(
    "source, target, error, match",
    [
        (SOURCE[:3], TARGET, ValueError, r"`source_tokens` .*S=4.*len\(source_tokens\)=3"),
        (SOURCE + ["x"], TARGET, ValueError, r"`source_tokens` .*S=4.*len\(source_tokens\)=5"),
        (SOURCE, TARGET[:2], ValueError, r"`target_tokens` .*T=3.*len\(target_tokens\)=2"),
        (SOURCE, 3, TypeError, r"`target_tokens` must be a list.*target_tokens=3"),
        (SOURCE, ["a", None, "b"], TypeError, r"target_tokens\[1\]=None"),
        (np.array([SOURCE]), TARGET, ValueError, r"`source_tokens` must be 1-D.*\(1, 4\)"),
    ],
)
def test_bad_tokens(source, target, error, match):
    with pytest.raises(error, match=match):
        plot_alignment(WEIGHTS, source, target)


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r'pip install "keras-recurrent-attention\[plot\]"'):
        plot_alignment(WEIGHTS, SOURCE, TARGET)
