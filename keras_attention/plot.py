"""Alignment heatmaps: where each output token looked in the source.

Needs matplotlib (an optional dependency: `pip install "keras-recurrent-attention[plot]"`),
imported only when a function here is called. Figures are built with
`matplotlib.figure.Figure` directly (no `pyplot` global state), so they work headless.
"""

from __future__ import annotations

import functools
import numbers
from typing import Any

import numpy as np

__all__ = ["plot_alignment"]

_INSTALL_HINT = 'pip install "keras-recurrent-attention[plot]"'
# Whitespace drawn as visible symbols (all in matplotlib's default DejaVu Sans).
_VISIBLE = str.maketrans({" ": "␣", "\t": "⇥", "\n": "↵", "\r": "⏎"})
_EMPTY_TOKEN = "∅"
# Bundled with matplotlib >= 3.10: a box glyph per Unicode block for any code point. Named
# explicitly it is an ordinary fallback font, so matplotlib does not warn when it is used.
_LAST_RESORT = "Last Resort High-Efficiency"


def plot_alignment(
    weights: Any,
    source_tokens: Any,
    target_tokens: Any,
    ax: Any = None,
    title: str | None = None,
    cmap: Any = "Blues",
) -> Any:
    """Draw alignment weights `[T, S]` as a heatmap: output tokens down, source tokens across.

    Row `t` holds the weights `a_t` with which output step `t` attended to the `S` source
    positions (what `Seq2Seq.generate(...)["alignments"][b]`, `Translator(...)["alignments"]
    [b]` or `return_attention_scores=True` give for one sequence). Source tokens label the
    x axis (one per column, written vertically unless all are single characters), target
    tokens the y axis (one per row); the colour scale is fixed to [0, 1] (`vmin=0`,
    `vmax=1`) with a colorbar, so figures compare across models. Whitespace stays visible
    (`" "` is drawn as `"␣"`, an empty token as `"∅"`), `$` is drawn literally (no
    mathtext), and characters the default font lacks fall back to installed fonts that have
    them, else to matplotlib's box glyph, without warnings.

    The figure is built with `matplotlib.figure.Figure` (no `pyplot` state): save it with
    `fig.savefig(path)`; in a notebook it displays as the cell's value.

    Args:
        weights: The alignment weights, `[T, S]`: a NumPy array, a backend tensor or nested
            lists of numbers. Trim padding before plotting (the tokens must match the
            weights' shape exactly; nothing is guessed).
        source_tokens: `S` tokens for the columns: a list of strings (or bytes, or numbers),
            a 1-D array or string tensor, or one string whose characters are the tokens.
        target_tokens: `T` tokens for the rows, in the same forms.
        ax: Optional matplotlib `Axes` to draw into (a colorbar is added next to it). Defaults
            to `None`: a new `Figure` sized to the number of tokens.
        title: Optional title of the axes. Defaults to `None`.
        cmap: A matplotlib colormap or its name. Defaults to `"Blues"`.

    Returns:
        The `matplotlib.figure.Figure` drawn into (`ax.figure` when `ax` is given).

    Raises:
        ImportError: matplotlib is not installed.
        ValueError: `weights` is not a non-empty rank-2 array of numbers, or a token list's
            length differs from the matching dimension of `weights`.
        TypeError: `weights` or a token argument has an unusable type.

    Example:

    >>> import io
    >>> import numpy as np
    >>> weights = np.array([[0.9, 0.1, 0.0], [0.1, 0.7, 0.2]])
    >>> fig = plot_alignment(weights, ["a", " ", "b"], ["x", "y"], title="toy")
    >>> ax = fig.axes[0]
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['a', '␣', 'b']
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['x', 'y']
    >>> np.array_equal(ax.images[0].get_array(), weights)
    True
    >>> fig.savefig(io.BytesIO(), format="png")
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            f"`keras_attention.plot` needs matplotlib. Install it with: {_INSTALL_HINT}"
        ) from error

    weights, source, target = _checked_inputs(weights, source_tokens, target_tokens)
    rows, columns = weights.shape
    if ax is not None and not (hasattr(ax, "imshow") and hasattr(ax, "figure")):
        raise TypeError(f"`ax` must be a matplotlib Axes or None. Received: ax={ax!r}")
    if ax is None:
        figsize = (
            min(max(2.5 + 0.28 * columns, 4.0), 24.0),
            min(max(1.8 + 0.28 * rows, 3.0), 24.0),
        )
        figure = Figure(figsize=figsize, layout="constrained")
        ax = figure.add_subplot()
    else:
        figure = ax.figure
    image = ax.imshow(
        weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    _label_axes(ax, source, target, title)
    figure.colorbar(image, ax=ax, label="attention weight")
    return figure


def _checked_inputs(weights: Any, source_tokens: Any, target_tokens: Any) -> tuple:
    """`(weights, source, target)`: the weights as a `[T, S]` array and the tokens as display
    strings, one per column and one per row."""
    weights = _as_weights(weights)
    rows, columns = weights.shape
    source = _as_tokens("source_tokens", source_tokens)
    target = _as_tokens("target_tokens", target_tokens)
    for name, tokens, size, axis in (
        ("source_tokens", source, columns, "column (S"),
        ("target_tokens", target, rows, "row (T"),
    ):
        if len(tokens) != size:
            raise ValueError(
                f"`{name}` must have one token per {axis}={size}) of `weights` (shape "
                f"{weights.shape}). Received: len({name})={len(tokens)}"
            )
    return weights, source, target


def _label_axes(ax: Any, source: list[str], target: list[str], title: str | None) -> None:
    """Label the heatmap: source tokens across, target tokens down, the axes and the title."""
    label_style = {"parse_math": False}
    family = _font_family(source + target)
    if family is not None:
        label_style["fontfamily"] = family
    # Vertical source labels cannot overlap; single characters read best upright.
    rotation = 90 if any(len(token) > 1 for token in source) else 0
    ax.set_xticks(np.arange(len(source)), source, rotation=rotation, **label_style)
    ax.set_yticks(np.arange(len(target)), target, **label_style)
    ax.tick_params(length=0)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title is not None:
        title_family = _font_family([str(title)])
        title_style = {} if title_family is None else {"fontfamily": title_family}
        ax.set_title(str(title), **title_style)


def _as_weights(weights: Any) -> np.ndarray:
    """`weights` as a float64 `[T, S]` NumPy array (from arrays, tensors or lists)."""
    if weights is None or isinstance(weights, (str, bytes)):
        raise TypeError(
            f"`weights` must be a [T, S] array of numbers. Received: weights={weights!r}"
        )
    if not isinstance(weights, (np.ndarray, list, tuple, numbers.Number)):
        import keras

        try:
            weights = keras.ops.convert_to_numpy(weights)
        except Exception as error:  # noqa: BLE001  (any backend's conversion error)
            raise TypeError(
                "`weights` must be a [T, S] array or tensor of numbers. Received: "
                f"weights of type {type(weights).__name__}"
            ) from error
    try:
        array = np.asarray(weights)
    except ValueError as error:  # ragged nested lists
        raise ValueError(
            f"`weights` must be a rectangular [T, S] array. Received: weights={weights!r}"
        ) from error
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"`weights` must hold numbers. Received: weights with dtype {array.dtype}")
    if array.ndim != 2 or 0 in array.shape:
        hint = " (plot one sequence: weights[i])" if array.ndim == 3 else ""
        raise ValueError(
            f"`weights` must be a non-empty rank-2 array [T, S]{hint}. Received: weights of "
            f"shape {array.shape}"
        )
    array = array.astype(np.float64)
    bad = int(np.count_nonzero(~np.isfinite(array)))
    if bad:
        raise ValueError(
            f"`weights` must be finite (a NaN or Inf would be drawn as an empty cell). "
            f"Received: weights with {bad} NaN/Inf value(s) of {array.size}"
        )
    return array


def _as_tokens(name: str, tokens: Any) -> list[str]:
    """`tokens` as a list of display strings (whitespace made visible)."""
    if isinstance(tokens, str):
        items: list = list(tokens)
    elif isinstance(tokens, (list, tuple)):
        items = list(tokens)
    elif isinstance(tokens, np.ndarray) or hasattr(tokens, "shape"):
        if not isinstance(tokens, np.ndarray):
            import keras

            tokens = keras.ops.convert_to_numpy(tokens)
        if tokens.ndim != 1:
            raise ValueError(
                f"`{name}` must be 1-D (one token per position). Received: {name} of shape "
                f"{tokens.shape}"
            )
        items = tokens.tolist()
    else:
        raise TypeError(
            f"`{name}` must be a list of tokens (or one string of characters). Received: "
            f"{name}={tokens!r}"
        )
    return [_display(name, index, item) for index, item in enumerate(items)]


def _display(name: str, index: int, token: Any) -> str:
    if isinstance(token, bytes):
        token = token.decode("utf-8", errors="replace")
    elif isinstance(token, (numbers.Number, np.generic)):
        token = str(token)
    elif not isinstance(token, str):
        raise TypeError(
            f"`{name}` must hold strings, bytes or numbers. Received: {name}[{index}]={token!r}"
        )
    return token.translate(_VISIBLE) if token else _EMPTY_TOKEN


def _font_family(texts: list[str]) -> list[str] | None:
    """`None` when the default font draws every character of `texts`; else the default
    family followed by installed fonts that have the missing characters (and matplotlib's
    Last Resort font for any still missing): matplotlib falls back along the list."""
    from matplotlib import font_manager, rcParams

    needed = {ord(char) for text in texts for char in text}
    missing = needed - _code_points(font_manager.findfont(font_manager.FontProperties()))
    if not missing:
        return None
    family = list(rcParams["font.family"])
    last_resort = False
    for entry in font_manager.fontManager.ttflist:
        if entry.name == _LAST_RESORT:
            last_resort = True
            continue
        if entry.name in family:
            continue
        covered = missing & _code_points(entry.fname)
        if covered:
            family.append(entry.name)
            missing -= covered
            if not missing:
                break
    if missing and last_resort:
        family.append(_LAST_RESORT)
    return family


@functools.cache
def _code_points(path: str) -> frozenset:
    """The code points the font file at `path` has glyphs for (empty if it cannot load)."""
    from matplotlib.ft2font import FT2Font

    try:
        return frozenset(FT2Font(path).get_charmap())
    except Exception:  # noqa: BLE001  (a broken font file only means no fallback from it)
        return frozenset()
