"""The three papers reproduced: their findings (`paper_findings.toml`, each with a machine check),
the experiments that measure them under the paper profile and under our defaults, and the page
that gives a verdict for each (`cpdispatch reproduce`)."""

from __future__ import annotations

from .run import reproduce

__all__ = ["reproduce"]
