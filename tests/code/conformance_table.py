"""The conformance table: rows read from docs/conformance.toml, printed into the README.

Run `python tests/code/conformance_table.py --write` after editing the data file; without
`--write` it prints the README section it would write.
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "conformance.toml"
README = ROOT / "README.md"
START = "<!-- conformance:start -->\n"
END = "<!-- conformance:end -->\n"

SPECS = ("stable", "draft", "both")
LEVELS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY")
STATUSES = ("met", "partial", "left")
FIELDS = {"id", "spec", "level", "section", "text", "status", "tests", "reason"}


@dataclass(frozen=True)
class Row:
    id: str
    spec: str
    level: str
    section: str
    text: str
    status: str
    tests: tuple[str, ...]
    reason: str

    @property
    def keyword(self) -> str:
        """MUST NOT counts with MUST, SHOULD NOT with SHOULD."""
        return self.level.split()[0]

    def in_spec(self, spec: str) -> bool:
        return self.spec in (spec, "both")


def load(path: Path = DATA) -> list[Row]:
    with path.open("rb") as f:
        data = tomllib.load(f)
    rows = []
    for raw in data.get("row", []):
        if set(raw) != FIELDS:
            raise ValueError(f"row {raw.get('id')!r}: fields must be exactly {sorted(FIELDS)}, got {sorted(raw)}")
        rows.append(Row(id=raw["id"], spec=raw["spec"], level=raw["level"], section=raw["section"],
                        text=raw["text"], status=raw["status"], tests=tuple(raw["tests"]), reason=raw["reason"]))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _count(rows: list[Row], spec: str, keyword: str) -> str:
    chosen = [r for r in rows if r.in_spec(spec) and r.keyword == keyword]
    by_status = Counter(r.status for r in chosen)
    rest = [f"{by_status[s]} {s}" for s in ("partial", "left") if by_status[s]]
    return f"{by_status['met']}/{len(chosen)}" + (f" ({', '.join(rest)})" if rest else "")


def totals(rows: list[Row], spec: str) -> dict[str, tuple[int, int]]:
    """(met, total) per keyword for one specification."""
    out = {}
    for keyword in ("MUST", "SHOULD", "MAY"):
        chosen = [r for r in rows if r.in_spec(spec) and r.keyword == keyword]
        out[keyword] = (sum(r.status == "met" for r in chosen), len(chosen))
    return out


def render(rows: list[Row]) -> str:
    lines = [
        "| Met / total | MUST | SHOULD | MAY |",
        "|---|---|---|---|",
        "| Stable 2026-01-26 | " + " | ".join(_count(rows, "stable", k) for k in ("MUST", "SHOULD", "MAY")) + " |",
        "| Current draft | " + " | ".join(_count(rows, "draft", k) for k in ("MUST", "SHOULD", "MAY")) + " |",
        "",
        f"{len(rows)} rows. MUST counts MUST NOT, SHOULD counts SHOULD NOT; a row marked *both* counts in each.",
        "",
        "| Id | Spec | Level | Requirement (section) | Status | Proof, or why it is left |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        proof = "<br>".join(f"`{t}`" for t in r.tests)
        if r.reason:
            proof = f"{proof}<br>{_cell(r.reason)}" if proof else _cell(r.reason)
        requirement = f"{_cell(r.text)} ({_cell(r.section)})"
        lines.append(f"| `{r.id}` | {r.spec} | {r.level} | {requirement} | {r.status} | {proof} |")
    return START + "\n".join(lines) + "\n" + END


def readme_section(text: str) -> str | None:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        return None
    return text[start:end + len(END)]


def write() -> None:
    text = README.read_text(encoding="utf-8")
    old = readme_section(text)
    if old is None:
        raise SystemExit(f"README.md has no {START.strip()} … {END.strip()} markers")
    README.write_text(text.replace(old, render(load())), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        sys.stdout.write(render(load()))
