"""`PairModel`: a model folder written by `train`, to decode, score and export."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import keras

from keras_attention._validation import is_integer
from keras_attention.decoding.searches import Search, check_search
from keras_attention.models import Translator
from keras_attention.pairs.files import Pairs, normalize_source
from keras_attention.pairs.settings import Settings
from keras_attention.pairs.trainer import DECODE_PAD, FILES, FORMAT, decode, error_rates
from keras_attention.pairs.vocabulary import Vocabulary

__all__ = ["PairModel"]


class PairModel:
    """A trained model folder (`keras_attention.pairs.train`'s): its settings, vocabularies
    and `Seq2Seq` (or `Seq2SeqEnsemble`), with `predict`, `evaluate` and the exports.

    Args:
        directory: The model folder.

    Raises:
        FileNotFoundError: the folder is not a complete model folder (a missing file is named).
        ValueError: its `config.json` is of another format.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        missing = [n for n in FILES if not (self.directory / n).is_file()]
        if missing:
            raise FileNotFoundError(
                f"`--model` must be a folder written by `keras-attention train`; {missing} "
                f"missing. Received: model={str(self.directory)!r}"
            )
        config = json.loads((self.directory / "config.json").read_text(encoding="utf-8"))
        if config.get("format") != FORMAT:
            raise ValueError(
                f"{self.directory / 'config.json'} is of format {config.get('format')!r}; this "
                f"version reads format {FORMAT}. Received: model={str(self.directory)!r}"
            )
        self.config = config
        self.settings = Settings.from_dict(config["settings"])
        self.source_vocabulary = Vocabulary(config["source_vocabulary"])
        self.target_vocabulary = Vocabulary(config["target_vocabulary"])
        self.model = keras.saving.load_model(self.directory / "model.keras", compile=False)
        self._translators: dict[tuple, Translator] = {}

    def translator(self, search: Search | None = None, n_best: int = 1) -> Translator:
        """The `Translator` of `search` (a `keras_attention.decoding` search; default: the
        settings', `settings.search()`), checked to give `n_best` hypotheses a source
        (compiled once per search)."""
        search = check_search(search, self.settings.search())
        if not is_integer(n_best) or not 1 <= n_best <= search.beam_width:
            raise ValueError(
                "`n_best` must be between 1 and the search's beam width (a BeamSearch keeps "
                f"that many hypotheses). Received: n_best={n_best!r}, search={search!r}"
            )
        if search not in self._translators:
            self._translators[search] = Translator(
                self.model,
                search,
                jit_compile=self.settings.jit_compile,
                pad_to_multiple=DECODE_PAD,
            )
        return self._translators[search]

    def predict(
        self, sources: list[str], search: Search | None = None, n_best: int = 1
    ) -> list[list[tuple[str, float]]]:
        """For each source (NFC-normalised here), its `n_best` best targets as
        `(symbols joined by spaces, or characters with target_chars, score)`, best first; the
        score is the sum of log-probabilities. `search` defaults to the settings'
        (`settings.search()`: beam search of `settings.beam_width`)."""
        sources = [normalize_source(s) for s in sources]
        translator = self.translator(search, n_best)
        if not sources:
            return []
        joiner = "" if self.settings.target_chars else " "
        results = decode(translator, sources, self.source_vocabulary)
        out = []
        for result in results:
            if n_best > 1:
                hypotheses = zip(result["beam_ids"][:n_best], result["beam_scores"][:n_best])
            else:
                hypotheses = [(result["ids"], result["scores"])]
            out.append(
                [
                    (joiner.join(self.target_vocabulary.decode(ids)), float(score))
                    for ids, score in hypotheses
                ]
            )
        return out

    def evaluate(self, pairs: Pairs, search: Search | None = None) -> dict[str, Any]:
        """WER and PER (%) on `pairs` (a prediction is right if it equals any reference of its
        source; PER is the edit distance to the closest reference over its length, summed
        over sources) with `search` (default: the settings'), the decoding time, and the
        predictions."""
        translator = self.translator(search)
        scored = error_rates(translator, pairs, self.source_vocabulary, self.target_vocabulary)
        return {
            "wer": scored["wer"],
            "per": scored["per"],
            "words": len(pairs),
            "errors": int(round(scored["wer"] * len(pairs) / 100)),
            "beam_width": translator.search.beam_width,
            "seconds": scored["seconds"],
            "ms_per_word": 1000 * scored["seconds"] / len(pairs),
            "predictions": scored["predictions"],
        }

    def tokenizers(self) -> tuple:
        """`(CharTokenizer, SymbolTokenizer or CharTokenizer)` of the vocabularies, for the
        string signatures of the exports (TensorFlow)."""
        from keras_attention.text import CharTokenizer, SymbolTokenizer

        source = CharTokenizer(vocabulary=self.source_vocabulary.symbols)
        target_class = CharTokenizer if self.settings.target_chars else SymbolTokenizer
        return source, target_class(vocabulary=self.target_vocabulary.symbols)

    def export_saved_model(
        self, path: str | os.PathLike, overwrite: bool = False, strings: bool | None = None
    ) -> list[str]:
        """A SavedModel for TF Serving (`keras_attention.export.export_saved_model`), beam
        search of the settings' width, sources up to twice the longest training source:
        `serving_default` takes ids; with `strings`, `translate` takes strings (NFC) and
        returns strings (it is built with `tensorflow-text`, though it loads without it).
        `strings=None` adds it where `tensorflow-text` is installed. Returns the signatures'
        names."""
        import importlib.util

        from keras_attention.export import export_saved_model

        available = importlib.util.find_spec("tensorflow_text") is not None
        if strings and not available:
            raise ImportError(
                "The `translate` signature is built with tensorflow-text: pip install "
                '"keras-recurrent-attention[text]". Received: strings=True'
            )
        source = target = None
        if strings or (strings is None and available):
            source, target = self.tokenizers()
        export_saved_model(
            self.translator(),
            path,
            source_tokenizer=source,
            target_tokenizer=target,
            overwrite=overwrite,
            max_source_length=2 * int(self.config["longest_source"]) + 8,
        )
        return ["serving_default", *(["translate"] if source is not None else [])]

    def export_litert(self, path: str | os.PathLike, overwrite: bool = False) -> dict:
        """A `.tflite` file (`keras_attention.export.export_litert`): `greedy` and `beam`
        signatures on ids `[1, source_length]`, sources up to the longest training source
        plus 8 characters (plus the end token)."""
        from keras_attention.export import export_litert

        return export_litert(
            self.model,
            path,
            self.settings.search(max(2, self.settings.beam_width)),
            source_length=int(self.config["longest_source"]) + 9,
            overwrite=overwrite,
        )
