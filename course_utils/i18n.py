"""One translation function for every learner-facing string of ``course_utils``.

English is the default. The Chinese notebooks (``zh/``) set ``COURSE_LANG=zh_CN`` in their first
code cell, and from then on checker messages, mistake names and hints, the doctor's findings,
``setup()`` and widget labels come from the catalogue ``course_utils/locale/zh_CN/LC_MESSAGES/*.mo``
(compiled from the ``.po`` files beside them by ``python -m tools.messages compile``).

* ``t(msgid, **fields)``: the translation of ``msgid`` (an English template with ``{name}``
  placeholders), formatted with ``fields``. A msgid the catalogue lacks comes back in English and
  is recorded in :data:`MISSING` (the tests fail on any).
* ``tn(singular, plural, n, **fields)``: the same for a message with a count (``{n}`` is filled).
* ``N_(msgid)``: marks a string for the catalogue without translating it now (a mistake's name
  stored when a lesson's checkers are defined, translated when it is shown).

Example:
    >>> from course_utils.i18n import t, tn, use_language
    >>> t("expected {want}, found {got}", want="a tensor", got="a list")
    'expected a tensor, found a list'
    >>> tn("passed {n} test case", "passed {n} test cases", 1)
    'passed 1 test case'
    >>> with use_language("en"):
    ...     t("[OK]")
    '[OK]'
"""

from __future__ import annotations

import contextlib
import gettext
import os
from functools import lru_cache
from pathlib import Path
from typing import Iterator

#: The environment variable that chooses the language (inherited by worker processes).
LANG_ENV = "COURSE_LANG"
ENGLISH = "en"
LANGUAGES = (ENGLISH, "zh_CN")
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
#: msgids asked for in a language whose catalogue lacks them (English was shown instead).
MISSING: set[tuple[str, str]] = set()
_override: list[str] = []


def normalise(name: str | None) -> str:
    """``"zh"``, ``"zh-CN"``, ``"zh_CN.UTF-8"`` -> ``"zh_CN"``; anything else -> ``"en"``.

    >>> normalise("zh-cn"), normalise("zh_CN.UTF-8"), normalise("fr"), normalise(None)
    ('zh_CN', 'zh_CN', 'en', 'en')
    """
    key = (name or "").split(".")[0].replace("-", "_").lower()
    return "zh_CN" if key in ("zh", "zh_cn", "zh_hans", "zh_hans_cn") else ENGLISH


def language() -> str:
    """The language in use: :func:`use_language` / :func:`set_language`, else ``$COURSE_LANG``."""
    return _override[-1] if _override else normalise(os.environ.get(LANG_ENV))


def set_language(name: str) -> str:
    """Choose the language for this process and the processes it starts; returns the one chosen."""
    chosen = normalise(name)
    os.environ[LANG_ENV] = chosen
    _override.clear()
    return chosen


@contextlib.contextmanager
def use_language(name: str) -> Iterator[str]:
    """Within the block, messages are in ``name`` (tests, and the grading of a Chinese notebook)."""
    _override.append(normalise(name))
    try:
        yield _override[-1]
    finally:
        _override.pop()


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """msgid -> msgstr of every ``.mo`` file of ``lang`` (plural entries under their singular)."""
    merged: dict[str, str] = {}
    folder = LOCALE_DIR / lang / "LC_MESSAGES"
    for path in sorted(folder.glob("*.mo")):
        with open(path, "rb") as f:
            table = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        for key, value in table.items():
            if isinstance(key, tuple):          # (singular, form index): Chinese has one form
                if key[1] == 0:
                    merged[key[0]] = value
            elif key:
                merged[key] = value
    return merged


def _lookup(msgid: str) -> str:
    lang = language()
    if lang == ENGLISH:
        return msgid
    found = catalogue(lang).get(msgid)
    if not found:
        MISSING.add((lang, msgid))
        return msgid
    return found


def t(msgid: str, /, **fields: object) -> str:
    """``msgid`` in the current language, its ``{placeholders}`` filled from ``fields``."""
    text = _lookup(msgid)
    return text.format(**fields) if fields else text


def tn(singular: str, plural: str, n: int, /, **fields: object) -> str:
    """A message with a count ``n`` (English chooses singular or plural; ``{n}`` is filled)."""
    lang = language()
    if lang == ENGLISH:
        text = singular if n == 1 else plural
    else:
        text = _lookup(singular)
    return text.format(n=n, **fields)


def N_(msgid: str) -> str:
    """Mark ``msgid`` for the catalogue; translate it later with :func:`t`."""
    return msgid
