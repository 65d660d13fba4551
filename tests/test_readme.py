"""The README's generated parts are up to date with their one source each (tools/badges.py):
badges from ``[tool.course] repository`` in pyproject.toml, minutes from the lessons' headers,
and every lesson's bootstrap from the same repository URL (tools/bootstrap.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tools import badges, bootstrap

ROOT = Path(__file__).resolve().parent.parent


def test_readme_is_what_the_generator_writes() -> None:
    repository, branch = badges.config()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert badges.readme_text(readme, repository, branch) == readme, \
        "README.md is out of date: run `python -m tools.badges`"


def test_every_lesson_starts_with_the_current_bootstrap() -> None:
    repository, _ = badges.config()
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")):
        text = lesson.read_text(encoding="utf-8")
        assert bootstrap.with_bootstrap(text, repository) == text, \
            f"{lesson.name}: its first cell's bootstrap is out of date: run `python -m tools.badges`"
        assert f'COURSE_REPO = "git+{repository}"' in text


def test_badges_follow_the_one_repository_url() -> None:
    """A fork's URL changes every badge, and nothing else names a repository."""
    repository, branch = badges.config()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    forked = badges.readme_text(readme, "https://github.com/someone/fork", "dev")
    owner_repo = repository.removeprefix("https://github.com/")
    assert f"/gh/{owner_repo}/" not in forked and f"/github/{owner_repo}/" not in forked
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert (f"(https://mybinder.org/v2/gh/someone/fork/dev?urlpath=lab/tree/notebooks/{notebook.name})"
                in forked)
        assert f"(https://colab.research.google.com/github/someone/fork/blob/dev/notebooks/{notebook.name})" in forked
        assert f"(https://mybinder.org/v2/gh/{owner_repo}/{branch}?urlpath=lab/tree/notebooks/{notebook.name})" \
            in readme


def test_minutes_come_from_the_lesson_headers(tmp_path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| (\d\d) \| `[^`]+` \| .*? \| (\d+) \| \[", readme, re.M)}
    headers = {p.name[:2]: badges.minutes(p) for p in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))}
    assert rows == headers and len(rows) == len(headers)
    assert f"About {sum(headers.values())} minutes in all" in readme
    # A changed header changes the table: the generator reads the headers, not the old table.
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    first = sorted(lessons.glob("00_*.py"))[0]
    first.write_text(re.sub(r"You will learn \(≈ \d+ min\)", "You will learn (≈ 99 min)",
                            first.read_text(encoding="utf-8"), count=1), encoding="utf-8")
    table = badges.curriculum(readme, *badges.config(), lessons=lessons)
    assert re.search(r"^\| 00 \| .* \| 99 \| \[", table, re.M)


def test_readme_states_python_versions_licences_and_updating() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Python 3.11–3.13" in readme and "## Updating the course" in readme
    assert "make reset NB=" in readme and "git pull" in readme
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "Attribution 4.0 International" in (ROOT / "LICENSE-CONTENT").read_text()
    assert "MIT" in readme and "CC BY 4.0" in readme


def test_chinese_readme_linked_both_ways_with_a_badge_per_chinese_notebook() -> None:
    english = (ROOT / "README.md").read_text(encoding="utf-8")
    chinese = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "(README.zh-CN.md)" in english and "(README.md)" in chinese
    for lesson in sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py")):
        assert f"urlpath=lab/tree/zh/notebooks/{lesson.stem}.ipynb" in chinese, lesson.stem
        assert f"/blob/main/zh/notebooks/{lesson.stem}.ipynb" in chinese, lesson.stem
    assert "make lab EDITION=zh" in chinese
