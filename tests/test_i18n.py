"""course_utils in Chinese: one translation function, a complete catalogue, no English left over.

* static: every string the source marks (``t``, ``tn``, ``N_``, the literal names, hints and tasks
  of ``Mistake``/``Exercise``) has a translation in ``course_utils/locale/zh_CN/LC_MESSAGES/``, with
  the same placeholders, the English's code spans and numbers, compiled to ``.mo``
  (``tools/messages.py``);
* at run time: every exercise's check, run in Chinese on the reference, on a stub and on every
  mistake's example, asks the catalogue for no missing msgid, and its message has no run of
  English words outside code, quotes and error text that comes from Python or torch itself.
"""

from __future__ import annotations

import os
import re

import pytest

from course_utils import i18n
from course_utils.exercises import check, get_exercise, list_exercises
from tools import messages, translate

#: The exercises of the lessons the Chinese edition publishes (lessons/zh_CN/edition.toml); while
#: translating, ``COURSE_I18N_LESSONS=00,01`` checks those lessons' exercises instead.
_LESSONS = os.environ.get("COURSE_I18N_LESSONS", "").split(",") if os.environ.get("COURSE_I18N_LESSONS") \
    else translate.edition()["published"]
COURSE_IDS = [e for e in list_exercises() if re.match(r"\d\d\.", e) and e[:2] in _LESSONS]

#: Text that stays English in a Chinese message: code spans, quoted values, reprs, an exception's
#: own text (Python's or torch's), dotted names, and the status tags.
_KEEP = [
    # what the learner's code raised, as the exception says it (torch's, onnxruntime's, safetensors'
    # own words, over several lines): from "你的函数抛出了 <Type>:" to the hint or the end
    re.compile(r"抛出了 [A-Z]\w*: .*?(?=\n  提示|\Z)", re.S),
    re.compile(r"`[^`]*`"),
    re.compile(r"'[^'\n]*'|\"[^\"\n]*\""),
    re.compile(r"<[^<>\n]*>"),
    re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)\b: [^\n（]*"),
    re.compile(r"\[(?:OK|FAIL|TODO)\]"),
]
_ENGLISH_RUN = re.compile(r"\b[A-Za-z]{2,}(?:[ ,]+[A-Za-z]+){2,}\b")


def english_left(text: str) -> list[str]:
    """Runs of three or more English words outside what stays English.

    >>> english_left("[FAIL] 01.x：在测试用例 1 上应为 `a + b`，实际为 'a list'")
    []
    >>> english_left("[FAIL] 01.x: expected a tensor, found a list")
    ['expected a tensor, found a list']
    >>> english_left("[FAIL] 12.y：你的函数抛出了 RuntimeError: \\n  Some tensors share memory here.\\n  提示（z）：用 `save_model`。")
    []
    """
    for pattern in _KEEP:
        text = pattern.sub(" ", text)
    return [m.group(0) for m in _ENGLISH_RUN.finditer(text)]


def test_catalogues_complete() -> None:
    problems = messages.problems(translate.message_areas())
    assert not problems, "\n".join(problems[:60]) + (f"\n... {len(problems)} in all" if len(problems) > 60 else "")


def _stub(*args, **kwargs):
    raise NotImplementedError("Your turn")


@pytest.mark.parametrize("exercise_id", COURSE_IDS)
def test_check_speaks_chinese(exercise_id: str) -> None:
    ex = get_exercise(exercise_id)
    i18n.MISSING.clear()
    results = []
    with i18n.use_language("zh_CN"):
        results.append(check(exercise_id, ex.reference))
        results.append(check(exercise_id, _stub))
        for mistake in ex.mistakes:
            results.append(check(exercise_id, mistake.example))
    missing = sorted(m for lang, m in i18n.MISSING if lang == "zh_CN")
    assert not missing, f"{len(missing)} msgids not in the catalogue, e.g. {missing[:5]}"
    leftovers = {r.message: english_left(r.message) for r in results if english_left(r.message)}
    assert not leftovers, "\n\n".join(f"{m}\n  -> English left: {e}" for m, e in list(leftovers.items())[:5])
    assert results[0].passed and all(r.message.startswith(("[OK]", "[FAIL]", "[TODO]")) for r in results)


def test_a_missing_translation_is_caught() -> None:
    i18n.MISSING.clear()
    with i18n.use_language("zh_CN"):
        text = i18n.t("a message no catalogue has, {n} times", n=2)
    assert text == "a message no catalogue has, 2 times"
    assert ("zh_CN", "a message no catalogue has, {n} times") in i18n.MISSING
    assert english_left(text)


def test_english_is_the_default_and_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(i18n.LANG_ENV, raising=False)
    assert i18n.language() == "en"
    english = check("00.double", lambda x: 2 * x).message
    assert re.fullmatch(r"\[OK\] 00\.double: passed \d+ test cases\.", english)
    monkeypatch.setenv(i18n.LANG_ENV, "zh_CN")
    assert i18n.language() == "zh_CN"
    chinese = check("00.double", lambda x: 2 * x).message
    assert chinese.startswith("[OK] 00.double") and not english_left(chinese)


def test_a_changed_placeholder_or_untranslated_string_is_named(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "course_utils"
    (package / "checks").mkdir(parents=True)
    (package / "checks" / "nb98.py").write_text(
        'from course_utils.i18n import t\n'
        'def verify(out):\n    return t("expected {want}, found {got}", want=1, got=out)\n'
        'Mistake("forgot the bias", "add `bias=True`", None)\n', encoding="utf-8")
    monkeypatch.setattr(messages, "ROOT", tmp_path)
    monkeypatch.setattr(messages, "PACKAGE", package)
    monkeypatch.setattr(messages, "FOLDER", package / "locale" / "zh_CN" / "LC_MESSAGES")
    messages.update()
    assert any("untranslated" in p and "nb98.py" in p for p in messages.problems())
    path = messages.FOLDER / "checks_nb98.po"
    catalog = messages._read(path)
    catalog["expected {want}, found {got}"].string = "应为 {want}，实际为 {found}"
    catalog["forgot the bias"].string = "忘了偏置"
    catalog["add `bias=True`"].string = "加上 `bias=True`"
    messages._write_po(catalog, path)
    messages.compile_all()
    problems = messages.problems()
    assert len(problems) == 1 and "placeholders ['want', 'got'] became ['want', 'found']" in problems[0]
    catalog["expected {want}, found {got}"].string = "应为 {want}，实际为 {got}"
    messages._write_po(catalog, path)
    assert any("not compiled" in p for p in messages.problems())
    messages.compile_all()
    assert messages.problems() == []


def test_a_failure_uses_the_frameworks_chinese_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A [FAIL] in Chinese: the case, expected/found, the hint and the HTML labels are the framework's
    Chinese (应为/实际为, 提示（…）：); in English the same failure reads exactly as before."""
    import torch

    from course_utils import exercises
    from course_utils.exercises import Exercise, Mistake, compare_tensors

    def keeps_a_column(x):
        return (2 * x).reshape(-1, 1)

    toy = Exercise("99.i18n_toy", "double x", lambda x: 2 * x, [lambda: ((torch.ones(3),), {})],
                   lambda out, ref, args, kwargs: compare_tensors(out, ref),
                   mistakes=[Mistake("keeps a column", "drop the reshape: `2 * x` is enough", keeps_a_column)])
    monkeypatch.setitem(exercises._REGISTRY, toy.exercise_id, toy)
    english = check(toy.exercise_id, keeps_a_column)
    assert english.message == ("[FAIL] 99.i18n_toy: on test case 1: expected result of shape (3,), found shape (3, 1)\n"
                               "  Hint (keeps a column): drop the reshape: `2 * x` is enough")
    assert "<b>expected</b>" in english._repr_html_() and "<b>Hint (keeps a column):</b>" in english._repr_html_()
    with i18n.use_language("zh_CN"):
        chinese = check(toy.exercise_id, keeps_a_column)
        page = chinese._repr_html_()
        todo = check(toy.exercise_id, _stub).message
        raised = check(toy.exercise_id, lambda x: x.nosuch()).message
    i18n.MISSING.clear()   # the toy's own task, name and hint are in no catalogue
    assert chinese.message == ("[FAIL] 99.i18n_toy：在测试用例 1 上：结果的形状应为 (3,)，实际为 (3, 1)\n"
                               "  提示（keeps a column）：drop the reshape: `2 * x` is enough")
    assert "<b>应为</b>" in page and "<b>实际为</b>" in page and "<b>提示（keeps a column）：</b>" in page
    assert todo.startswith("[TODO] 99.i18n_toy：尚未作答。任务：double x\n  把 `raise NotImplementedError` 换成")
    assert raised.startswith("[FAIL] 99.i18n_toy：在测试用例 1 上，你的函数抛出了 AttributeError: ")
    assert raised.endswith("\n  任务：double x") and "（位于 `" in raised
