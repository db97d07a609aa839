"""The constrained-inputs benchmark (benchmarks/constrained_inputs.py): its cases, the constraint
a person adds after the first answer, and a case run end to end."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

_path = Path(__file__).resolve().parents[2] / "benchmarks" / "constrained_inputs.py"
spec = importlib.util.spec_from_file_location("constrained_inputs", _path)
ci = importlib.util.module_from_spec(spec)
sys.modules.setdefault("constrained_inputs", ci)  # (its dataclasses look their module up)
spec.loader.exec_module(ci)


def test_cases_take_the_real_inputs_split_and_span_kinds_and_sizes():
    todo = ci.cases(1e6)
    split = ci.ri.split_of()
    assert {c.kind for c in todo} == set(ci.KINDS)
    assert {c.pixels for c in todo} == {10_000, 30_000, 100_000, 300_000, 1_000_000}
    assert all(c.split == split[c.image] for c in todo)
    assert {c.image for c in ci.cases(split="heldout")} == {
        n for n, s in split.items() if s == "heldout"}
    assert all(c.pixels == 10_000 for c in ci.cases(quick=True))


def test_the_constraint_binds_against_the_first_answer():
    labels = np.ones((20, 20), np.int32)
    labels[:, 12:] = 2  # label 1 holds 60 % of the image, label 2 40 %
    low = ci.constraints_for(ci.Case("cells", "area-low", 400, "tuning"), labels).area[0]
    high = ci.constraints_for(ci.Case("cells", "area-high", 400, "tuning"), labels).area[0]
    both = ci.constraints_for(ci.Case("cells", "area+apart", 400, "tuning"), labels)
    assert (low.label, low.lo, low.hi) == (1, pytest.approx(0.69), pytest.approx(0.75))
    assert (high.label, high.lo, high.hi) == (1, pytest.approx(0.45), pytest.approx(0.51))
    assert both.apart == ((1, 3),) and both.area[0].label == 2
    assert both.area[0].hi == pytest.approx(0.36)
    nest = ci.constraints_for(ci.Case("cells", "nest4", 400, "tuning"), labels)
    assert nest.apart == ((1, 3), (2, 4)) and not nest.area


def test_an_area_case_is_skipped_where_the_first_answer_barely_has_the_label():
    labels = np.full((40, 40), 2, np.int32)
    labels[:3, :3] = 1  # 9 pixels of label 1: a bound on them is no case a person makes
    assert ci.constraints_for(ci.Case("cells", "area-low", 1600, "tuning"), labels) is None
    assert ci.constraints_for(ci.Case("cells", "nest3", 1600, "tuning"), labels) is not None
    rec = {"image": "cells", "kind": "area-low", "k": 2, "n": 1600, "split": "tuning",
           "skipped": "label area under 50 pixels unconstrained"}
    assert "skipped" in ci.table([rec]) and "| tuning | area-low |" not in ci.summary([rec])


def test_a_record_is_on_target_only_when_feasible_and_close():
    base = {"kind": "nest3", "feasible": True, "bound": 10.0, "gap": 0.004, "gap_bound": 0.004,
            "best": 0.004}
    assert ci.on_target(base)
    assert not ci.on_target({**base, "gap": 0.006})
    assert not ci.on_target({**base, "feasible": False})
    area = {"kind": "area-low", "feasible": True, "bound": 9.0, "gap": -0.01, "gap_bound": 0.02,
            "best": 0.0}
    assert ci.on_target(area)  # above the bound by 2 %, but the best feasible labels found
    assert not ci.on_target({**area, "best": 0.001})


@pytest.mark.slow
def test_a_nesting_case_runs_and_reports(tmp_path, monkeypatch):
    case = ci.Case("cells", "nest3", 10_000, "tuning")
    monkeypatch.setattr(ci, "cases", lambda *a, **k: [case])
    assert ci.main(["--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "constrained_inputs.json").read_text())
    (rec,) = data["records"]
    assert rec["feasible"] and rec["reference"] == "layered min-cut"
    assert rec["bound"] == pytest.approx(rec["energy_ref"])  # exact: its own bound
    assert rec["gap"] >= -1e-9 and rec["time_ratio"] > 0
    md = (tmp_path / "constrained_inputs.md").read_text()
    assert "| tuning | nest3 | 1 |" in md and "| tuning | cells | nest3 | " in md
