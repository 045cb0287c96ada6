"""The README's conformance table: printed from docs/conformance.toml, every row proven by a test
that exists or left with a reason, so the table cannot drift from the suite."""

from __future__ import annotations

import ast
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from conformance_table import DATA, LEVELS, README, ROOT, SPECS, STATUSES, Row, load, readme_section, render, totals

ROWS = load()


@cache
def functions_in(path: Path) -> frozenset[str]:
    """Names of the module-level test functions pytest would collect from a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return frozenset(node.name for node in tree.body
                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"))


def test_the_data_file_has_rows_for_both_specifications():
    assert ROWS, f"{DATA} has no rows"
    for spec in ("stable", "draft"):
        counted = totals(ROWS, spec)
        assert all(total for _met, total in counted.values()), (spec, counted)


def test_ids_are_unique():
    repeated = [i for i, n in Counter(r.id for r in ROWS).items() if n > 1]
    assert not repeated, f"ids used more than once in {DATA.name}: {repeated}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_a_row_names_its_spec_level_and_status(row: Row):
    assert row.spec in SPECS, f"{row.id}: spec {row.spec!r} is not one of {SPECS}"
    assert row.level in LEVELS, f"{row.id}: level {row.level!r} is not one of {LEVELS}"
    assert row.status in STATUSES, f"{row.id}: status {row.status!r} is not one of {STATUSES}"
    assert row.section.strip() and row.text.strip(), f"{row.id}: the requirement and its section must be given"
    # The requirement is quoted with its own keyword, so a level changed in one place shows.
    assert row.level.split()[0] in row.text, f"{row.id}: the text does not carry its level {row.level}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_a_row_has_a_test_or_a_reason(row: Row):
    if row.status == "met":
        assert row.tests, f"{row.id} is marked met but cites no test"
    else:
        assert row.reason.strip(), f"{row.id} is {row.status} but says not why"
    if row.status == "left":
        assert not row.tests, f"{row.id} is left, yet cites tests: call it partial and say what is missing"
    assert len(set(row.tests)) == len(row.tests), f"{row.id} cites a test twice"


@pytest.mark.parametrize("row", [r for r in ROWS if r.tests], ids=lambda r: r.id)
def test_every_cited_test_exists(row: Row):
    for cited in row.tests:
        path_text, sep, name = cited.partition("::")
        assert sep and name and "::" not in name, f"{row.id}: {cited!r} is not path::test_function"
        path = (ROOT / path_text).resolve()
        assert path.is_relative_to(ROOT / "tests") and path.suffix == ".py", f"{row.id}: {cited!r} is not in tests/"
        assert path.is_file(), f"{row.id}: {path_text} does not exist"
        assert name in functions_in(path), f"{row.id}: {path_text} has no test function {name}"


def test_the_readme_table_is_printed_from_the_data():
    section = readme_section(README.read_text(encoding="utf-8"))
    assert section is not None, "README.md lost its conformance markers"
    assert section == render(ROWS), (
        "README.md's conformance table is out of date: run python tests/code/conformance_table.py --write")


def test_the_totals_count_every_row_once_per_specification():
    for spec in ("stable", "draft"):
        counted = totals(ROWS, spec)
        assert sum(total for _met, total in counted.values()) == sum(r.in_spec(spec) for r in ROWS)
        assert all(0 <= met <= total for met, total in counted.values())
