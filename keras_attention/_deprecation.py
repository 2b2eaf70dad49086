"""Renamed arguments: the old keyword keeps working, with a `DeprecationWarning`, until
`REMOVAL`. The one implementation of that rule, for keywords
(`take_renamed`, inside an `__init__` with `**kwargs`) and for functions
(`renamed_arguments`, a decorator). Giving the old and the new name at once is a
`ValueError` naming both. A saved config that holds an old key is not the user's call site:
`from_config` renames it silently (`rename_config_key`)."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

#: The release that removes the old keywords (announced with 0.2.0 for
#: `LuongAttentionCell(units=...)`, kept for every rename since).
REMOVAL = "0.4.0"

#: The searches' old keywords (0.1.0 to 0.2.x) and their names since: token ids are `*_id`
#: and a vocabulary's size is `vocabulary_size` everywhere, as in the models and `text`.
SEARCH_RENAMES = {
    "start_token": "start_id",
    "end_token": "end_id",
    "pad_token": "pad_id",
    "vocab_size": "vocabulary_size",
}


def _warn(owner: str, old: str, new: str, value: Any, note: str, stacklevel: int) -> None:
    warnings.warn(
        f"{owner}({old}=...) is deprecated: {note or f'the argument is now called `{new}`'}, "
        f"as in {owner}(..., {new}={value!r}). The `{old}` keyword will be removed in "
        f"keras_attention {REMOVAL} (configs that say `{old}` keep loading).",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def _refuse_both(old: str, new: str, old_value: Any, new_value: Any) -> None:
    raise ValueError(
        f"`{old}` is the old name of `{new}`: pass only {new}. Received: {old}={old_value!r}, "
        f"{new}={new_value!r}"
    )


def take_renamed(
    kwargs: dict,
    owner: str,
    old: str,
    new: str,
    value: Any,
    default: Any = None,
    note: str = "",
    stacklevel: int = 2,
) -> Any:
    """The value of `new`: `value`, or the old keyword `old` popped from `kwargs` (with a
    `DeprecationWarning` naming both and the removal version) when it is there. `value` other
    than `default` together with `old` is a `ValueError`. `stacklevel` counts from the caller
    of `take_renamed` (2: the caller of the `__init__` that calls it)."""
    if old not in kwargs:
        return value
    old_value = kwargs.pop(old)
    if value is not default:
        _refuse_both(old, new, old_value, value)
    _warn(owner, old, new, old_value, note, stacklevel + 1)
    return old_value


def rename_config_key(config: dict, old: str, new: str) -> dict:
    """`config` with the key `old` (what an earlier release saved) renamed `new`, silently.
    A config holding both keeps both (and the constructor refuses it)."""
    if old in config and new not in config:
        config = dict(config)
        config[new] = config.pop(old)
    return config


def renamed_arguments(**renames: str) -> Callable:
    """Decorate a function whose arguments `renames` (`old="new"`) were renamed: the old
    keywords keep working with a `DeprecationWarning`, both names at once are a `ValueError`.
    The function's signature (and its documentation) show the new names only."""

    def decorate(function: Callable) -> Callable:
        parameters = list(inspect.signature(function).parameters)
        owner = function.__name__

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if renames.keys() & kwargs.keys():
                positional = set(parameters[: len(args)])
                for old, new in renames.items():
                    if old not in kwargs:
                        continue
                    if new in kwargs:
                        _refuse_both(old, new, kwargs[old], kwargs[new])
                    if new in positional:
                        _refuse_both(old, new, kwargs[old], args[parameters.index(new)])
                    value = kwargs.pop(old)
                    _warn(owner, old, new, value, "", stacklevel=2)
                    kwargs[new] = value
            return function(*args, **kwargs)

        return wrapper

    return decorate
