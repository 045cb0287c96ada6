"""`check`'s output: a table for a person, JSON and JUnit XML for CI."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree as ET

from .findings import ViewResult

SUITE = "mcp-apps-host check"


def _ms(value: int | None) -> str:
    return "—" if value is None else f"{value} ms"


def table(results: Sequence[ViewResult], width: int = 110) -> str:
    """One row per view (result, time to ready, time to result), then the reasons under it."""
    name_width = max([len("view"), *(len(r.name) for r in results)]) + 2
    lines = [f"{'view'.ljust(name_width)}{'result':8}{'ready':>10}{'result':>10}", "-" * (name_width + 28)]
    for r in results:
        lines.append(f"{r.name.ljust(name_width)}{'pass' if r.passed else 'FAIL':8}"
                     f"{_ms(r.ready_ms):>10}{_ms(r.result_ms):>10}")
        for prefix, items in (("✗ ", r.failures), ("· ", r.notes)):
            for item in items:
                lines += textwrap.wrap(item, width, initial_indent="    " + prefix, subsequent_indent="      ")
    failed = sum(not r.passed for r in results)
    lines.append("")
    lines.append(f"{len(results) - failed} passed, {failed} failed" if results else "no views to check")
    return "\n".join(lines)


def to_json(results: Sequence[ViewResult]) -> str:
    doc: dict[str, Any] = {"passed": all(r.passed for r in results), "views": [r.to_json() for r in results]}
    return json.dumps(doc, indent=2, ensure_ascii=False)


def junit(results: Sequence[ViewResult]) -> bytes:
    """One testcase per view, named SERVER/TOOL; a failing view's first reason is its failure message."""
    suites = ET.Element("testsuites", name=SUITE)
    failures = sum(not r.passed for r in results)
    total_s = sum((r.result_ms or r.ready_ms or 0) for r in results) / 1000
    suite = ET.SubElement(suites, "testsuite", name=SUITE, tests=str(len(results)), failures=str(failures),
                          errors="0", skipped="0", time=f"{total_s:.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.server, name=r.name,
                             time=f"{(r.result_ms or r.ready_ms or 0) / 1000:.3f}")
        if r.failures:
            failure = ET.SubElement(case, "failure", message=r.failures[0], type="view-check")
            failure.text = "\n".join(r.failures)
        out = [f"arguments: {json.dumps(r.arguments, ensure_ascii=False)}",
               f"ready: {_ms(r.ready_ms)}, result: {_ms(r.result_ms)}", *r.notes]
        if r.screenshot:
            out.append(f"screenshot: {r.screenshot}")
        ET.SubElement(case, "system-out").text = "\n".join(out)
    ET.indent(suites)
    text: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return text + b"\n"
