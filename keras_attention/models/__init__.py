"""A reusable attention seq2seq builder and its compiled decoder.

`Seq2Seq` is a trainable, teacher-forced Keras model (encoder `Seq2SeqEncoder` + attentional
decoder `Seq2SeqDecoder`, optionally trained with scheduled sampling and the `ScheduledSampling`
callback); `Translator` decodes it greedily, with beam search or by sampling, ids to ids or
(with `keras_attention.text` tokenizers) strings to strings. `Seq2SeqEnsemble` searches
several trained `Seq2Seq` as one (the mean of their probabilities at every step).
"""

from keras_attention.models.decoder import Seq2SeqDecoder
from keras_attention.models.encoder import Seq2SeqEncoder
from keras_attention.models.ensemble import Seq2SeqEnsemble
from keras_attention.models.scheduled_sampling import ScheduledSampling
from keras_attention.models.seq2seq import Seq2Seq
from keras_attention.models.translator import Translator

__all__ = [
    "ScheduledSampling",
    "Seq2Seq",
    "Seq2SeqDecoder",
    "Seq2SeqEncoder",
    "Seq2SeqEnsemble",
    "Translator",
]
