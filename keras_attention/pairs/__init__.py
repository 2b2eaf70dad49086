"""Seq2seq on any TSV of string pairs: the library behind the `keras-attention` command.

Lines are `source<TAB>target`: sources are read as characters (Unicode NFC), targets as
space-separated symbols (or characters). `train` chooses settings from the data's size,
trains one model or an ensemble of seeds within a budget, keeps the weights of the best
validation WER, backs up every epoch (`resume=True` goes on from there) and writes a model
folder; `PairModel` reads that folder to `predict`, `evaluate` and export it.

    from keras_attention.pairs import PairModel, read_pairs, train

    train("train.tsv", "dev.tsv", "model/", time_budget=10)
    model = PairModel("model/")
    model.predict(["knife"], n_best=2)  # [[("N AY F", -0.1), ("K N AY F", -3.2)]]
    model.evaluate(read_pairs("test.tsv"))["wer"]

TensorFlow backend (training reads `tf.data`; the exports are TensorFlow's).
"""

from keras_attention.pairs.files import (
    Pairs,
    PairsFileError,
    normalize_source,
    read_pairs,
    read_raw_pairs,
    read_sources,
)
from keras_attention.pairs.litert_check import check_litert
from keras_attention.pairs.pair_model import PairModel
from keras_attention.pairs.settings import Settings, choose_settings
from keras_attention.pairs.trainer import train
from keras_attention.pairs.vocabulary import Vocabulary

__all__ = [
    "PairModel",
    "Pairs",
    "PairsFileError",
    "Settings",
    "Vocabulary",
    "check_litert",
    "choose_settings",
    "normalize_source",
    "read_pairs",
    "read_raw_pairs",
    "read_sources",
    "train",
]
