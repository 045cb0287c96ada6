"""The hostile-view corpus keeps its promise: at least 40 attacks across every family, unique
names, and a browser test naming each one (tests/browser/test_hostile_*.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "fixtures"))
import hostile  # noqa: E402

FAMILIES = {"network", "navigation", "reaching", "protocol", "resources", "deception"}
# Families whose tests are parametrized over hostile.names(family): every attack is a test id.
PARAMETRIZED = {"network": "test_hostile_network.py", "navigation": "test_hostile_navigation.py",
                "resources": "test_hostile_resources.py"}
EXPLICIT = {"reaching": "test_hostile_reaching.py", "protocol": "test_hostile_protocol.py",
            "deception": "test_hostile_deception.py"}


def test_the_corpus_has_forty_attacks_in_every_family():
    assert len(hostile.ATTACKS) >= 40
    assert {a.family for a in hostile.ATTACKS} == FAMILIES
    assert len({a.name for a in hostile.ATTACKS}) == len(hostile.ATTACKS)
    # Each network control runs the same script as its attack, against the declared origin.
    assert set(hostile.controls()) <= set(hostile.names("network"))


def test_every_attack_has_a_test_of_its_own():
    for family, module in PARAMETRIZED.items():
        text = (TESTS / "browser" / module).read_text()
        assert f'hostile.names("{family}")' in text, module
    for family, module in EXPLICIT.items():
        defined = set(re.findall(r"^def (test_\w+)\(", (TESTS / "browser" / module).read_text(), re.M))
        for name in hostile.names(family):
            assert any(t.endswith("_" + name.replace("-", "_")) for t in defined), (module, name)
