"""The fast lane's list names tests that exist (a renamed slow test would silently join the lane)."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import SLOW_MODULES, SLOW_TESTS

HERE = Path(__file__).parent


def test_every_slow_entry_names_an_existing_test() -> None:
    assert all((HERE / f"{m}.py").is_file() for m in SLOW_MODULES)
    for entry in SLOW_TESTS:
        file, test = entry.split("::")
        name = re.split(r"[\[]", test)[0]
        assert re.search(rf"^def {name}\(", (HERE / file).read_text(), flags=re.M), entry
