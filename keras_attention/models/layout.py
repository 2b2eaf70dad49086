"""`keras.distribution` layouts for `Seq2Seq`: the vocabulary-sized weights sharded.

A `Seq2Seq`'s parameters that grow with the vocabularies are the two embedding tables
(`encoder/embedding/embeddings` `[V_src, E]`, `decoder/embedding/embeddings` `[V_tgt, E]`) and
the vocabulary projection (`decoder/projection/kernel` `[units', V_tgt]`, `.../bias`
`[V_tgt]`): at a 64k vocabulary they are most of the model. `get_layout_map` shards each along
its vocabulary axis over the mesh's model axis and leaves every other weight replicated;
`keras.distribution.ModelParallel` then shards the batch over the data axis. XLA's SPMD
partitioner inserts the collectives (the embedding gather, the projection's all-gather of
logits), so the step's math is unchanged: the tests find the losses and weights of one device.
"""

from __future__ import annotations

import keras

# Variable-path patterns (`LayoutMap` matches them to `variable.path` with `re.fullmatch`) and
# which axis of each weight is the vocabulary.
VOCABULARY_WEIGHTS = {
    r"(.*/)?encoder/embedding/embeddings": 0,
    r"(.*/)?decoder/embedding/embeddings": 0,
    r"(.*/)?decoder/projection/kernel": 1,
    r"(.*/)?decoder/projection/bias": 0,
}


def get_layout_map(
    device_mesh: keras.distribution.DeviceMesh, model_parallel_dim_name: str = "model"
) -> keras.distribution.LayoutMap:
    """The `keras.distribution.LayoutMap` that shards `Seq2Seq`'s vocabulary-sized weights.

    The embedding tables and the vocabulary projection are split along their vocabulary axis
    over the mesh axis `model_parallel_dim_name`; other weights are replicated. Use it with
    `keras.distribution.ModelParallel(layout_map=..., batch_dim_name=...)`, the batch split
    over the mesh's other axis. Each vocabulary size must be a multiple of the model axis'
    size (JAX shards evenly): pad the vocabulary if needed. Available as
    `Seq2Seq.get_layout_map`, the name KerasHub's models use.

    Args:
        device_mesh: A `keras.distribution.DeviceMesh`.
        model_parallel_dim_name: The mesh axis the vocabularies are split over. Defaults to
            `"model"`.

    Returns:
        A `keras.distribution.LayoutMap` on `device_mesh`.

    Example:

    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh((1, 1), ["batch", "model"], ["cpu:0"])
    >>> layout_map = get_layout_map(mesh)
    >>> layout_map["seq2_seq/decoder/projection/kernel"].axes
    (None, 'model')
    """
    if not isinstance(device_mesh, keras.distribution.DeviceMesh):
        raise TypeError(
            "`device_mesh` must be a `keras.distribution.DeviceMesh`. "
            f"Received: device_mesh={device_mesh!r:.200}"
        )
    if model_parallel_dim_name not in device_mesh.axis_names:
        raise ValueError(
            "`model_parallel_dim_name` must be one of the mesh's axis names "
            f"{list(device_mesh.axis_names)}. "
            f"Received: model_parallel_dim_name={model_parallel_dim_name!r}"
        )
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axis in VOCABULARY_WEIGHTS.items():
        rank = 1 if pattern.endswith("bias") else 2
        layout_map[pattern] = tuple(
            model_parallel_dim_name if i == axis else None for i in range(rank)
        )
    return layout_map
