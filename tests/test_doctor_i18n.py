"""The training doctor in Chinese: the same findings, every string from the catalogue, no English left.

A few real bugs of the corpus (tests/doctor_corpus) are diagnosed in English and in Chinese
(``use_language("zh_CN")``): the codes and severities must be the same, no msgid may be missing
from ``course_utils/locale/zh_CN/LC_MESSAGES/doctor.po`` (:data:`course_utils.i18n.MISSING`), and the
report (its HTML, which is not wrapped, and each finding's observed / why / fix) may hold no run
of three English words outside code, quotes and the exception text that comes from torch.
"""

from __future__ import annotations

import html
import re

import pytest
import torch
from doctor_corpus import CASES
from test_i18n import english_left

from course_utils import i18n
from course_utils.doctor import diagnose

BY_NAME = {case.name: case for case in CASES}
#: One case per kind of message: graph, registration, exception text, gradients, shapes, labels,
#: dtypes, input scale with divergence, RNN layout, eval mode.
CHOSEN = [
    "softmax layer before CrossEntropyLoss",
    "hidden layers in a Python list",
    "in-place update of a tensor needed by backward",
    "RNN hidden state carried without .data",
    "zero_grad outside the batch loop",
    "depth map (N, 1, H, W) vs target (N, H, W)",
    "segmentation masks 0/255 as class indices",
    "float64 NumPy features",
    "MNIST pixels never divided by 255",
    "(batch, time) inputs to an LSTM without batch_first",
    "model.eval() in test(), never model.train()",
    "every parameter frozen for fine-tuning",
]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _visible_text(report) -> str:
    """What the learner reads, unwrapped: the HTML table's text."""
    return html.unescape(re.sub(r"<[^>]+>", "\n", report._repr_html_()))


def test_the_chosen_cases_exist() -> None:
    assert set(CHOSEN) <= set(BY_NAME), sorted(set(CHOSEN) - set(BY_NAME))


@pytest.mark.parametrize("name", CHOSEN)
def test_doctor_speaks_chinese(name: str) -> None:
    case = BY_NAME[name]
    english = diagnose(*case.buggy())
    i18n.MISSING.clear()
    with i18n.use_language("zh_CN"):
        chinese = diagnose(*case.buggy())
        text, page = str(chinese), _visible_text(chinese)
        parts = [part for item in chinese.findings for part in item.parts()]
    missing = sorted(m for lang, m in i18n.MISSING if lang == "zh_CN")
    assert not missing, f"{len(missing)} msgids not in the catalogue, e.g. {missing[:5]}"
    assert [(f.code, f.severity) for f in chinese.findings] == [(f.code, f.severity) for f in english.findings]
    assert case.expected in chinese.codes
    assert all(parts), "every finding has observed, why and fix in Chinese too"
    left = english_left(page) + [e for part in parts for e in english_left(part)]
    assert not left, f"English left in the Chinese report: {left[:5]}\n{text}"
    assert text.startswith("训练诊断器：") and "严重程度" in text and "为何重要：" in text
    assert english.ok == chinese.ok and len(chinese.notes) == len(english.notes)


def test_english_report_is_unchanged() -> None:
    """The English table keeps its exact layout (the Chinese edition changed nothing in it)."""
    report = diagnose(*BY_NAME["softmax layer before CrossEntropyLoss"].buggy())
    lines = str(report).splitlines()
    assert re.fullmatch(r"Training doctor: 1 error, 0 warnings \(diagnosis took \d+\.\d\d s\)", lines[0])
    assert lines[1] == "severity  code               details"
    assert lines[2] == "--------  -----------------  -------"
    assert lines[3].startswith("ERROR     SOFTMAX_BEFORE_CE  Observed: the scores given to the loss come")
    assert "Why it matters: softmax is applied twice" in report.findings[0].message


def test_code_meanings_speak_chinese() -> None:
    """``CODES`` (printed as a table in lesson 10) reads each meaning in the current language."""
    from course_utils.doctor import CODES

    english = dict(CODES.items())
    i18n.MISSING.clear()
    with i18n.use_language("zh_CN"):
        chinese = dict(CODES.items())
        assert CODES["NAN_OR_INF"] == chinese["NAN_OR_INF"] == CODES.get("NAN_OR_INF")
    assert not [m for lang, m in i18n.MISSING if lang == "zh_CN"]
    assert list(chinese) == list(english) and all(chinese[c] != english[c] for c in english)
    assert not [e for meaning in chinese.values() for e in english_left(meaning)]
    assert english["LR_TOO_HIGH"] == "the loss diverges when the model trains on one batch"
