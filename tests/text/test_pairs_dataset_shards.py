"""`pairs_dataset(num_shards=..., shard_index=...)`: disjoint shards that cover every pair."""

from __future__ import annotations

import pytest
import tensorflow as tf

from keras_attention.text import CharTokenizer, pairs_dataset

SOURCES = ["ab", "ba", "aab", "bba", "abab", "b", "a"]  # 7 distinct: shards of 3, 2, 2


def sources_of(dataset) -> list[str]:
    letters = {4: "a", 5: "b"}
    rows = [row for inputs, _ in dataset for row in inputs["source_ids"].numpy().tolist()]
    return ["".join(letters[i] for i in row if i in letters) for row in rows]


@pytest.fixture
def tokenizer():
    return CharTokenizer(vocabulary=["a", "b"])


@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_are_disjoint_and_cover_every_pair(tokenizer, shuffle):
    shards = [
        sources_of(pairs_dataset(SOURCES, SOURCES, tokenizer, tokenizer, batch_size=2,
                                 shuffle=shuffle, num_shards=3, shard_index=i))
        for i in range(3)
    ]  # fmt: skip
    assert sorted(s for shard in shards for s in shard) == sorted(SOURCES)
    assert [sorted(shard) for shard in shards] == [
        sorted(SOURCES[0::3]),
        sorted(SOURCES[1::3]),
        sorted(SOURCES[2::3]),
    ]


def test_shards_turn_the_strategy_auto_sharding_off(tokenizer):
    off = tf.data.experimental.AutoShardPolicy.OFF
    one = pairs_dataset(SOURCES, SOURCES, tokenizer, tokenizer)
    two = pairs_dataset(SOURCES, SOURCES, tokenizer, tokenizer, num_shards=2, shard_index=1)
    assert one.options().experimental_distribute.auto_shard_policy != off
    assert two.options().experimental_distribute.auto_shard_policy == off


def test_a_shard_with_no_pair_is_empty(tokenizer):
    dataset = pairs_dataset(["ab"], ["ab"], tokenizer, tokenizer, shuffle=True,
                            num_shards=2, shard_index=1)  # fmt: skip
    assert sources_of(dataset) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_shards": 0}, "Received: num_shards=0"),
        ({"num_shards": 2, "shard_index": 2}, "Received: shard_index=2, num_shards=2"),
        ({"shard_index": -1}, "Received: shard_index=-1"),
    ],
)
def test_bad_shards_are_refused(tokenizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        pairs_dataset(["ab"], ["ab"], tokenizer, tokenizer, **kwargs)
