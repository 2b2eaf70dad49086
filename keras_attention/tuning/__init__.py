"""keras-tuner search spaces for the seq2seq builder (`keras_attention.models.Seq2Seq`).

`search_space(hp, **fixed)` chooses `Seq2Seq` keyword arguments with a keras-tuner
`HyperParameters`; `Seq2SeqHyperModel` builds and compiles a `Seq2Seq` from them (and a tuned
learning rate), for any keras-tuner tuner (`RandomSearch`, `Hyperband`, `BayesianOptimization`).

Needs keras-tuner (`pip install "keras-recurrent-attention[tuning]"`, which also installs the
`tensorboard` that keras-tuner imports).
"""

try:
    import keras_tuner  # noqa: F401
except ImportError as error:
    raise ImportError(
        "`keras_attention.tuning` needs keras-tuner (and the tensorboard it imports). Install "
        'them with: pip install "keras-recurrent-attention[tuning]"'
    ) from error

from keras_attention.tuning.search_spaces import search_space
from keras_attention.tuning.seq2seq_hypermodel import Seq2SeqHyperModel

__all__ = ["Seq2SeqHyperModel", "search_space"]
