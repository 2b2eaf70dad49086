"""Load the variables of a TensorFlow Addons `AttentionWrapper` into a `LuongAttentionCell`.

tfa 0.23's `AttentionWrapper` is tracked by TensorFlow's object-based checkpoints
(`tf.train.Checkpoint(...).write`, tf.keras `Model.save_weights` in the TF format) under object
paths such as `…/_cell/kernel`, `…/_attention_mechanisms/0/memory_layer/kernel` and
`…/_attention_layers/0/kernel`. This module reads the checkpoint's object graph (not the
variables' key strings: a variable reachable by two paths is stored under one of them only),
finds the wrappers in it, maps each wrapper variable onto a weight of the cell and assigns them
all, after checking every shape.

Reading a TensorFlow checkpoint needs TensorFlow installed; the Keras backend may be any
(the values are assigned as NumPy arrays).
"""

from __future__ import annotations

import os
import warnings
from collections import deque
from typing import Any

import keras
import numpy as np

__all__ = ["load_tfa_weights"]

_VALUE = "VARIABLE_VALUE"

# tfa mechanism variables by our weight name, per family of attention layer. A layer belongs to
# the first family whose key weight it has (`score_kernel`: tfa's Luong mechanisms, whose
# `memory_layer` is our `W_g`; `query_kernel`: tfa's Bahdanau mechanisms). `score_bias` is the
# monotonic mechanisms' `attention_score_bias` (BahdanauMonotonicAttention /
# LuongMonotonicAttention), so those load through the same tables.
_MECHANISM_FAMILIES = (
    (
        "score_kernel",
        "LuongAttention(units) / LuongMonotonicAttention",
        {
            "score_kernel": "memory_layer/kernel",
            "scale": "attention_g",
            "score_bias": "attention_score_bias",
        },
    ),
    (
        "query_kernel",
        "BahdanauAttention(units) / BahdanauMonotonicAttention",
        {
            "query_kernel": "query_layer/kernel",
            "key_kernel": "memory_layer/kernel",
            "score_vector": "attention_v",
            "norm_scale": "attention_g",
            "norm_bias": "attention_b",
            "score_bias": "attention_score_bias",
        },
    ),
)

_HINTS = (
    "tfa's LuongAttention maps to LuongAttention('general', use_scale=scale), its "
    "BahdanauAttention(units) to AdditiveAttention(score_units=units, normalize=normalize); "
    "AttentionWrapper's attention_layer_size n / [n1, n2] to LuongAttentionCell's "
    "attention_units=n / [n1, n2], None to attention_layer=False; a list of mechanisms to a "
    "list of attention layers; tfa always feeds the attention (input_feeding=True)."
)


def _import_tensorflow():
    try:
        import tensorflow as tf
        from tensorflow.core.protobuf.trackable_object_graph_pb2 import TrackableObjectGraph
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_tfa_weights reads TensorFlow checkpoints and needs TensorFlow (any Keras "
            'backend works): pip install "keras-recurrent-attention[tensorflow]"'
        ) from error
    return tf, TrackableObjectGraph


def _one_line(error: BaseException) -> str:
    """An exception's message on one line, at most 300 characters."""
    text = " ".join(str(getattr(error, "message", None) or error).split())
    return text[:300]


class _Graph:
    """The object graph of a checkpoint: children by name, variables' checkpoint keys."""

    def __init__(self, reader, graph_cls) -> None:
        if not reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"):
            raise ValueError(
                "The checkpoint has no object graph: it is a TF1 name-based checkpoint, which "
                "load_tfa_weights cannot map. Re-save it with tf.train.Checkpoint(...).write."
            )
        proto = graph_cls()
        proto.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
        self.children = [{c.local_name: c.node_id for c in node.children} for node in proto.nodes]
        self.keys = [
            next((a.checkpoint_key for a in node.attributes if a.name == _VALUE), None)
            for node in proto.nodes
        ]

    def paths_to_wrappers(self) -> dict:
        """`{node id: [object paths]}` of every AttentionWrapper, shortest paths first."""
        found: dict = {}
        queue = deque([(0, "", frozenset([0]))])
        while queue and sum(map(len, found.values())) < 1000:
            node, path, seen = queue.popleft()
            children = self.children[node]
            if "_cell" in children and "_attention_mechanisms" in children:
                found.setdefault(node, []).append(path)
                continue  # a wrapper inside a wrapper is not a thing tfa builds
            for name, child in children.items():
                if child not in seen:
                    queue.append((child, f"{path}/{name}" if path else name, seen | {child}))
        return found

    def variables_under(self, node: int) -> dict:
        """`{path relative to node: (variable node id, checkpoint key)}` of the variables below
        `node`; a variable tracked under two names (tfa's Luong `scale_weight` is also
        `attention_g`) appears under both."""
        out: dict = {}
        stack = [(node, "", frozenset([node]))]
        while stack:
            current, path, seen = stack.pop()
            if self.keys[current] is not None:
                out.setdefault(path, (current, self.keys[current]))
            for name, child in self.children[current].items():
                if child not in seen:
                    stack.append((child, f"{path}/{name}" if path else name, seen | {child}))
        return out


def _select_wrapper(wrappers: dict, scope: str | None, checkpoint: str) -> tuple:
    listing = "; ".join(" = ".join(repr(p) for p in paths) for paths in wrappers.values()) or "none"
    if not wrappers:
        raise ValueError(
            f"No tfa AttentionWrapper found in the checkpoint {checkpoint!r} (no object with "
            "both `_cell` and `_attention_mechanisms`)."
        )
    if scope is None:
        chosen = list(wrappers.items())
    else:
        scope = scope.strip("/")
        chosen = [
            (node, paths)
            for node, paths in wrappers.items()
            if any(p == scope or p.endswith("/" + scope) for p in paths)
        ]
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise ValueError(
            f"No AttentionWrapper of the checkpoint matches scope={scope!r} (an object path, or "
            f"its last components). Found wrappers at: {listing}"
        )
    raise ValueError(
        f"The checkpoint holds {len(chosen)} AttentionWrappers"
        f"{'' if scope is None else f' matching scope={scope!r}'}: pick one with `scope` (an "
        f"object path, or its last components). Found wrappers at: {listing}"
    )


def _cell_mapping(inner) -> dict:
    """Our weights of the wrapped Keras cell by tfa path (`_cell/…`)."""
    if isinstance(inner, keras.layers.StackedRNNCells):
        return {
            f"_cell/cells/{i}/{w.name}": w for i, sub in enumerate(inner.cells) for w in sub.weights
        }
    return {f"_cell/{w.name}": w for w in inner.weights}


def _attention_mapping(i: int, layer) -> tuple:
    """Our weights of attention layer `i` by tfa path, and those without a tfa counterpart."""
    names = {w.name: w for w in layer.weights}
    for key_weight, family, table in _MECHANISM_FAMILIES:
        if key_weight in names:
            mapped = {
                f"_attention_mechanisms/{i}/{table[n]}": w for n, w in names.items() if n in table
            }
            unmatched = [
                f"{w.path} (not in tfa's {family})" for n, w in names.items() if n not in table
            ]
            return mapped, unmatched
    return {}, [f"{w.path} (no tfa mechanism has it)" for w in layer.weights]


def load_tfa_weights(cell: Any, checkpoint: str, scope: str | None = None) -> dict:
    """Load a tfa 0.23 `AttentionWrapper`'s trained variables into a built `LuongAttentionCell`.

    The wrapper is found in the checkpoint's object graph (an object with `_cell` and
    `_attention_mechanisms`); its variables map onto the cell's weights:

    - `_cell/kernel`, `_cell/recurrent_kernel`, `_cell/bias` (`_cell/cells/<i>/…` for
      `StackedRNNCells`) → the wrapped cell's weights of the same names;
    - Luong mechanism `<k>`: `_attention_mechanisms/<k>/memory_layer/kernel` → `score_kernel`
      of `attentions[k]`, `attention_g` → `scale`;
    - Bahdanau mechanism `<k>`: `query_layer/kernel` → `query_kernel`, `memory_layer/kernel` →
      `key_kernel`, `attention_v` → `score_vector`, `attention_g` → `norm_scale`,
      `attention_b` → `norm_bias`;
    - monotonic mechanisms: also `attention_score_bias` → `score_bias`;
    - `_attention_layers/<k>/kernel` → `attention_kernel` (`attention_kernel_<k>` with several).

    Every weight of the cell must find a variable of the same shape and every variable of the
    wrapper a weight; otherwise a `ValueError` lists what was found, what is missing, what is
    left over and what is misshaped, and nothing is assigned. Only the wrapper is loaded:
    embeddings and output layers are read by hand (`tf.train.load_checkpoint(path)
    .get_tensor(key)`, see docs/migrating-from-tfa.md). The cell must be configured as the
    wrapper was (the checkpoint holds no configuration): tfa's attention layer has no
    activation (`attention_activation=None`), and `output_attention` changes no weight.

    Args:
        cell: A built `LuongAttentionCell` (e.g. after one call of its `AttentionRNN`), or the
            `AttentionRNN` running it.
        checkpoint: The checkpoint's path prefix, a string or path-like (`…/ckpt-1`, what
            `Checkpoint.write` returned), or a directory with a `checkpoint` file.
        scope: Which wrapper, when the checkpoint holds several: its object path (e.g.
            `"model/decoder/cell"`) or the last components of it (`"cell"`). Defaults to
            `None` (the checkpoint must hold exactly one).

    Returns:
        The mapping used: `{our weight path: checkpoint key}`.

    Example:

    >>> import keras, numpy as np
    >>> from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
    >>> cell = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention("general"),
    ...                           attention_units=5, attention_activation=None)
    >>> _ = AttentionRNN(cell)(np.zeros((1, 2, 3)), np.zeros((1, 5, 4)))  # builds it
    >>> # mapping = load_tfa_weights(cell, "tfa_checkpoints/ckpt-1")
    """
    cell = _checked_cell(cell)
    checkpoint, reader, graph, unreadable = _open_checkpoint(checkpoint)
    node, paths = _select_wrapper(graph.paths_to_wrappers(), scope, checkpoint)
    found = graph.variables_under(node)
    expected, no_counterpart = _expected_weights(cell)
    shapes = reader.get_variable_to_shape_map()
    _check_match(cell, paths[0], expected, found, shapes, no_counterpart)
    _warn_about_activation(cell)
    try:
        values = {p: reader.get_tensor(found[p][1]) for p in expected}  # all read, then assigned
    except unreadable as error:
        raise ValueError(
            f"The checkpoint's data is corrupt (truncated or changed); nothing was loaded: "
            f"{_one_line(error)}. Received: checkpoint={checkpoint!r}"
        ) from error
    for p, weight in expected.items():
        weight.assign(np.asarray(values[p], dtype=keras.backend.standardize_dtype(weight.dtype)))
    return {weight.path: found[p][1] for p, weight in sorted(expected.items())}


def _checked_cell(cell: Any) -> Any:
    """The `LuongAttentionCell` to load into (an `AttentionRNN`'s), checked to be built."""
    from keras_attention.cells.attention_rnn import AttentionRNN
    from keras_attention.cells.luong_attention_cell import LuongAttentionCell

    if isinstance(cell, AttentionRNN):
        cell = cell.cell
    if not isinstance(cell, LuongAttentionCell):
        raise TypeError(
            "`cell` must be a LuongAttentionCell: tfa's AttentionWrapper queries the attention "
            "with the current cell output (Luong's order) for every mechanism, Bahdanau's "
            f"included. Received: cell={cell!r}"
        )
    if not cell.built:
        raise ValueError(
            "`cell` must be built before loading (call its AttentionRNN once, or "
            "cell.build(inputs_shape, memory_shape)). Received: an unbuilt cell "
            f"{cell.name!r}"
        )
    return cell


def _open_checkpoint(checkpoint: Any) -> tuple:
    """`(checkpoint, reader, graph, unreadable)`: the checkpoint path as a string, its reader
    and object graph, and the exceptions by which TensorFlow reports a corrupt one."""
    if isinstance(checkpoint, os.PathLike):
        checkpoint = os.fspath(checkpoint)
    if not isinstance(checkpoint, str) or not checkpoint:
        raise ValueError(
            f"`checkpoint` must be a checkpoint path. Received: checkpoint={checkpoint!r}"
        )
    tf, graph_cls = _import_tensorflow()
    path = tf.train.latest_checkpoint(checkpoint) or checkpoint
    # A corrupt checkpoint (a random or truncated `.index`, a truncated or bit-flipped `.data`
    # shard) fails inside TensorFlow with an `OpError` (the `.index` is not an sstable, a
    # checksum does not match) or an `IndexError` ("Read less bytes than requested"): each is
    # reported as the `ValueError` every other failed load raises, naming the file. All values
    # are read before any is assigned, so the cell is unchanged.
    unreadable = (tf.errors.OpError, IndexError, ValueError)
    try:
        reader = tf.train.load_checkpoint(path)
        graph = _Graph(reader, graph_cls)
    except unreadable as error:
        raise ValueError(
            f"Could not read a TensorFlow checkpoint at `checkpoint` (missing, or not a valid "
            f"checkpoint): {_one_line(error)}. Received: checkpoint={checkpoint!r}"
        ) from error
    return checkpoint, reader, graph, unreadable


def _expected_weights(cell: Any) -> tuple:
    """`(expected, no_counterpart)`: the cell's weights by the wrapper's variable path, and
    the weights tfa has no variable for."""
    expected = _cell_mapping(cell.cell)
    no_counterpart = []
    for i, layer in enumerate(cell.attentions):
        mapped, unmatched = _attention_mapping(i, layer)
        expected.update(mapped)
        no_counterpart += unmatched
    for i, kernel in enumerate(cell.attention_layer_kernels):
        expected[f"_attention_layers/{i}/kernel"] = kernel
    return expected, no_counterpart


def _check_match(
    cell: Any, wrapper: str, expected: dict, found: dict, shapes: dict, no_counterpart: list
) -> None:
    """Refuse a wrapper whose variables and the cell's weights do not pair up one to one with
    the same shapes, listing what is missing, left over and misshaped."""
    missing = sorted(p for p in expected if p not in found)
    used = {found[p][0] for p in expected if p in found}
    aliases: dict = {}
    for p, (variable, _) in sorted(found.items()):
        aliases.setdefault(variable, []).append(p)
    unused = sorted(names[0] for variable, names in aliases.items() if variable not in used)
    misshaped = sorted(
        f"{p}: checkpoint {list(shapes[found[p][1]])}, {expected[p].path} {list(expected[p].shape)}"
        for p in expected
        if p in found and tuple(shapes[found[p][1]]) != tuple(expected[p].shape)
    )
    if not (missing or unused or misshaped or no_counterpart):
        return
    listing = ", ".join(
        " = ".join(names) + f" {list(shapes[found[names[0]][1]])}"
        for names in sorted(aliases.values())
    )
    problems = []
    if missing:
        problems.append(f"missing in the checkpoint: {', '.join(missing)}")
    if unused:
        problems.append(f"matching no weight of the cell: {', '.join(unused)}")
    if misshaped:
        problems.append(f"misshaped: {'; '.join(misshaped)}")
    if no_counterpart:
        problems.append(f"without a tfa counterpart: {', '.join(no_counterpart)}")
    raise ValueError(
        f"The AttentionWrapper at {wrapper!r} does not match cell {cell.name!r}; nothing "
        f"was loaded. {'. '.join(problems)}. Found under the wrapper: {listing}. {_HINTS}"
    )


def _warn_about_activation(cell: Any) -> None:
    """Warn when the cell's attention layer has an activation (tfa's has none)."""
    activation = cell.attention_activation
    if cell.attention_layer and activation is not None:
        name = keras.activations.serialize(activation)
        if name != "linear":
            warnings.warn(
                f"tfa's attention layer has no activation but cell {cell.name!r} applies "
                f"{name!r}: its outputs will differ from tfa's. Build it with "
                "attention_activation=None.",
                stacklevel=3,  # the caller of load_tfa_weights
            )
