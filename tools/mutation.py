"""Mutation testing by module group (``make mutation``; not part of ``make test``).

Each group pairs the modules it mutates with the tests that are meant to guard them. A group
runs in its own scratch copy of the tree (``out/mutation/<group>/``) whose ``[tool.mutmut]``
names only that group's modules and tests, so a mutant is judged by the tests written for it
(mutmut then runs, of those, the ones that reach the mutated function): a few hours on two
cores for all groups instead of days. mutmut resumes an interrupted group; ``--again`` re-runs
the survivors after tests were added, re-mapping tests to functions first.

The report counts, per module, mutmut's verdicts. Mutants judged equivalent (no input can tell
them from the original; each with its reason in ``tools/mutation_equivalent.json``) leave the
denominator::

    score = (killed + timeout) / (mutants - equivalent - not checked)

A timeout counts as killed (the mutant made a run go on far past the original's time, which a
user notices); "no tests" (no test in the group reaches the function) counts as survived.

Mutants that change only the text of a command-line option's ``help``, ``description`` or
``metavar`` (found by comparing each mutant's syntax tree with the original's, those strings
blanked) are documentation, not behaviour: they are not run and are reported in their own
column, outside the score.

Usage::

    python tools/mutation.py run [GROUP ...] [--jobs N]
    python tools/mutation.py report [--out out/mutation.md] [--survivors]
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "out" / "mutation"

# group -> (modules mutated, tests that guard them)
GROUPS: dict[str, tuple[list[str], list[str]]] = {
    "cli": (["segapp/cli/__init__.py", "segapp/cli/segment.py"],
            ["tests/segapp/cli/test_cli.py", "tests/segapp/cli/test_cli_options.py",
             "tests/segapp/cli/test_cli_constraints.py", "tests/segapp/cli/test_cli_outputs.py",
             "tests/segapp/core/test_cutout.py", "tests/segapp/cli/test_files_written.py",
             "tests/segapp/cli/test_cli_messages.py"]),
    # (tests/segapp/cli/test_bad_inputs.py runs the installed console script in child processes,
    # which import the tree the package was installed from, not the scratch copy's mutant: only
    # its in-process tests are named, and in-process tests cover the rest of what it checks)
    "io": (["segapp/core/io.py"],
           ["tests/segapp/core/test_io_files.py", "tests/segapp/core/test_roundtrips.py",
            "tests/segapp/cli/test_cli_outputs.py", "tests/segapp/cli/test_files_written.py",
            ("tests/segapp/cli/test_bad_inputs.py"
             "::test_every_exif_orientation_matches_pillows_reading"),
            "tests/segapp/core/test_mutation_guards_io.py", "tests/segapp/core/test_cutout.py"]),
    "session": (["segapp/core/session.py"],
                ["tests/segapp/core/test_session_validation.py",
                 "tests/segapp/core/test_roundtrips.py", "tests/segapp/model/test_model.py",
                 "tests/segapp/cli/test_files_written.py::test_a_session_file_holds_the_document",
                 "tests/segapp/core/test_mutation_guards_session.py"]),
    "colour": (["solver/mrf/build/colour.py"],
               ["tests/solver/mrf/build/test_mrf_colour.py",
                "tests/solver/mrf/build/test_model_inputs.py",
                "tests/solver/mrf/build/test_mutation_guards_colour.py"]),
    "canvas": (["segapp/ui/canvas.py"],
               # the window tests that look at the canvas (what it draws, zoom, fit, pan), not
               # the result tests, whose runs take minutes per mutant
               ["tests/segapp/ui/test_ui_canvas_agrees.py", "tests/segapp/ui/test_ui_fit.py",
                "tests/segapp/ui/test_ui_window.py", "tests/segapp/ui/test_ui.py",
                "tests/segapp/ui/test_mutation_guards_canvas.py"]),
    "pipeline": (["segapp/core/pipeline.py"],
                 ["tests/segapp/core/test_pipeline.py", "tests/segapp/cli/test_cli.py",
                  "tests/segapp/cli/test_cli_options.py",
                  "tests/segapp/cli/test_cli_constraints.py"]),
    "app": (["segapp/ui/runctl.py", "segapp/ui/frames.py", "segapp/ui/fileops.py"],
            # every test that drives the window: a function reached only from, say, the
            # status-bar tests would otherwise count its mutants as survivors
            ["tests/segapp/ui/test_ui.py", "tests/segapp/ui/test_ui_results.py",
             "tests/segapp/ui/test_ui_lifecycle.py", "tests/segapp/ui/test_ui_app.py",
             "tests/segapp/ui/test_ui_render.py", "tests/segapp/ui/test_ui_status.py",
             "tests/segapp/ui/test_ui_window.py", "tests/segapp/ui/test_ui_constraints.py",
             "tests/segapp/ui/test_ui_panels.py"]),
    "admm-loop": (["solver/admm/loop.py"],
                  ["tests/solver/bqp/test_admm.py", "tests/solver/mrf/solve/test_mrf_admm.py",
                   "tests/solver/mrf/solve/test_mrf_freeze.py",
                   "tests/solver/mrf/solve/test_quality.py",
                   "tests/solver/admm/steps/test_fused_step.py",
                   "tests/solver/mrf/build/test_constraints.py",
                   "tests/solver/admm/test_admm_generic.py",
                   "tests/solver/problems/test_problem_tv.py",
                   "tests/solver/mrf/solve/test_apart_split.py"]),
    "polish": (["solver/mrf/polish/pipeline.py"],
               ["tests/solver/mrf/solve/test_mrf_admm.py",
                "tests/solver/mrf/polish/test_mrf_fusion.py",
                "tests/solver/mrf/solve/test_mrf_freeze.py",
                "tests/solver/mrf/build/test_constraints.py",
                "tests/solver/mrf/solve/test_quality.py",
                "tests/solver/mrf/polish/test_polish_driver.py"]),
}

# Where a group guards only part of a module: the mutants run (fnmatch patterns on mutant
# names); the others are left unchecked and out of the score. fileops.py also opens, saves and
# lists files; the app's result features in it are the three exports.
SCOPE: dict[str, tuple[str, ...]] = {
    "app": ("segapp.ui.runctl.*", "segapp.ui.frames.*",
            "segapp.ui.fileops.xǁFileOpsMixinǁsave_labels__mutmut_*",
            "segapp.ui.fileops.xǁFileOpsMixinǁsave_overlay__mutmut_*",
            "segapp.ui.fileops.xǁFileOpsMixinǁsave_history__mutmut_*",
            "segapp.ui.fileops.xǁFileOpsMixinǁ_export_path__mutmut_*"),
}

# Modules too costly to run whole on two cores: a function of the window is reached by dozens
# of Qt tests, and the ADMM loop's run() by the quality tests, so a surviving mutant costs
# minutes. Their score is measured on a uniform random sample of this many of their in-scope
# mutants (fixed by the module's name, so a re-run judges the same ones), which estimates it
# without the bias of judging the fastest tests' mutants first; the report gives the sample's
# 95% interval.
SAMPLE: dict[str, int] = {"segapp/ui/runctl.py": 80, "segapp/ui/frames.py": 30,
                          "solver/admm/loop.py": 200, "segapp/core/io.py": 80,
                          "segapp/core/session.py": 80, "solver/mrf/build/colour.py": 80,
                          "segapp/ui/canvas.py": 40}

# mutmut's exit-code meanings (mutmut.stats.status_by_exit_code, 3.8)
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout",
          255: "timeout", 37: "killed", -11: "segfault", -9: "segfault", None: "not checked"}

_SKIP = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "mutants", "out")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


def prepare(group: str) -> Path:
    """A scratch copy of the tree for ``group``, its mutmut settings narrowed to the group."""
    modules, tests = GROUPS[group]
    dest = WORK / group
    for entry in ROOT.iterdir():
        if entry.name in {".venv", ".git", "out", "mutants", "build"} or \
                entry.name.endswith(".egg-info"):
            continue
        target = dest / entry.name
        if target.is_dir():
            shutil.rmtree(target)
        if entry.is_dir():
            shutil.copytree(entry, target, ignore=_SKIP)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(entry, target)
    conf = (dest / "pyproject.toml").read_text()
    conf = re.sub(r"only_mutate = \[.*?\]", "only_mutate = " + _toml_list(modules), conf,
                  flags=re.S)
    conf = re.sub(r"pytest_add_cli_args_test_selection = \[.*?\]",
                  "pytest_add_cli_args_test_selection = " + _toml_list(tests), conf, flags=re.S)
    (dest / "pyproject.toml").write_text(conf)
    return dest


_DOC_KEYWORDS = {"help", "description", "metavar", "epilog"}
_MUTANT = re.compile(r"^(?P<func>.+)__mutmut_(?P<n>orig|\d+)$")


def _blank_docs(node: ast.AST) -> str:
    """``ast.dump`` of a function without its calls' doc keywords."""
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            call.keywords = [kw for kw in call.keywords if kw.arg not in _DOC_KEYWORDS]
    node.name = ""  # type: ignore[attr-defined]
    return ast.dump(node)


def docs_only_in(source: str, dotted: str) -> set[str]:
    """Names of the mutants in mutmut's mutated ``source`` of module ``dotted`` that change
    only help/description/metavar text."""
    funcs: dict[str, dict[str, ast.AST]] = {}
    for node in ast.walk(ast.parse(source)):
        m = _MUTANT.match(getattr(node, "name", "")) if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if m:
            funcs.setdefault(m["func"], {})[m["n"]] = node
    found: set[str] = set()
    for func, versions in funcs.items():
        orig = versions.pop("orig", None)
        if orig is None:
            continue
        base = _blank_docs(orig)
        found |= {f"{dotted}.{func}__mutmut_{n}" for n, node in versions.items()
                  if _blank_docs(node) == base}
    return found


def docs_only(group: str) -> set[str]:
    """Names of the group's mutants that change only help/description/metavar text."""
    found: set[str] = set()
    for module in GROUPS[group][0]:
        path = WORK / group / "mutants" / module
        if path.exists():
            found |= docs_only_in(path.read_text(), _dotted(module))
    return found


def _results(group: str) -> dict[str, int | None]:
    """mutmut's exit code by mutant name for the group (None: not run yet)."""
    codes: dict[str, int | None] = {}
    for module in GROUPS[group][0]:
        meta = WORK / group / "mutants" / (module + ".meta")
        if meta.exists():
            codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def _dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def sample(group: str, module: str, names: list[str], docs: set[str]) -> set[str] | None:
    """The mutants of ``module`` that stand for it (None: all of them). For a module in
    ``SAMPLE``, a uniform random choice among its in-scope mutants that are not docs-only
    (``docs``: :func:`docs_only` of the group), seeded by the module's path."""
    size = SAMPLE.get(module)
    if size is None:
        return None
    scope = SCOPE.get(group, ("*",))
    pool = sorted(n for n in names if n.startswith(_dotted(module) + ".") and n not in docs
                  and any(fnmatch.fnmatchcase(n, pattern) for pattern in scope))
    return set(random.Random(module).sample(pool, min(size, len(pool))))


def run(groups: list[str], jobs: int, again: bool = False) -> int:
    """``mutmut run`` for each group in its scratch copy; returns the worst exit status.

    The first pass runs each function's first mutant (which makes mutmut generate them all and
    time the tests); the second runs every mutant without a verdict that is not docs-only, and
    with ``again`` the survivors too (after tests were added for them)."""
    mutmut = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(jobs)]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    worst = 0
    for group in groups:
        dest = prepare(group)
        print(f"mutation: {group} in {dest}", flush=True)
        if not _results(group):
            worst = max(worst, subprocess.call([*mutmut, "*__mutmut_1"], cwd=dest, env=env))
        if again:  # mutmut maps tests to functions once; tests added since must be seen
            (dest / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        skip = docs_only(group)
        rerun = {None, 0, 5, 33} if again else {None}
        scope = SCOPE.get(group, ("*",))
        results = _results(group)
        picked = set()  # the sampled modules' samples
        for module in GROUPS[group][0]:
            picked |= sample(group, module, list(results), skip) or set()
        sampled = tuple(_dotted(m) + "." for m in GROUPS[group][0] if m in SAMPLE)
        # (an equivalent mutant's verdict does not count; one judged on another version of
        # its function is run again)
        judged = fresh_equivalents(group, equivalents())
        todo = [name for name, code in results.items()
                if code in rerun and name not in skip and name not in judged
                and (name in picked or not name.startswith(sampled))
                and any(fnmatch.fnmatchcase(name, pattern) for pattern in scope)]
        if todo:
            worst = max(worst, subprocess.call([*mutmut, *todo], cwd=dest, env=env))
    return worst


def equivalents() -> dict[str, tuple[str, str]]:
    """Mutant name -> (hash of the mutated function when it was judged, why no input can tell
    the mutant from the original)."""
    path = ROOT / "tools" / "mutation_equivalent.json"
    return {k: tuple(v) for k, v in json.loads(path.read_text()).items()} if path.exists() \
        else {}


def function_hashes(group: str) -> dict[str, str]:
    """Hash of each mutated function of the group's modules (mutmut's, in its ``.meta``
    files), by mutant-name prefix (``segapp.cli.segment.x_run``)."""
    out: dict[str, str] = {}
    for module in GROUPS[group][0]:
        meta = WORK / group / "mutants" / (module + ".meta")
        if meta.exists():
            hashes = json.loads(meta.read_text()).get("hash_by_function_name", {})
            out.update({f"{_dotted(module)}.{func}": h for func, h in hashes.items()})
    return out


def fresh_equivalents(group: str, equivalent: dict[str, tuple[str, str]]) -> set[str]:
    """The mutants judged equivalent on the version of their function the group now has."""
    hashes = function_hashes(group)
    return {name for name, (judged_on, _) in equivalent.items()
            if hashes.get(name.split("__mutmut_")[0]) == judged_on}


def tally(group: str, module: str, equivalent: dict[str, tuple[str, str]],
          docs: set[str]) -> tuple[Counter, list[str]]:
    """Status counts for one module's mutants, and the names of its survivors. An equivalence
    judged on another version of the function (its hash differs) no longer counts: it is
    listed as stale and the mutant keeps mutmut's verdict."""
    meta = WORK / group / "mutants" / (module + ".meta")
    counts: Counter = Counter()
    survivors: list[str] = []
    if not meta.exists():
        return counts, survivors
    data = json.loads(meta.read_text())
    codes, hashes = data["exit_code_by_key"], data.get("hash_by_function_name", {})
    picked = sample(group, module, list(codes), docs)
    if picked is not None:
        codes = {name: code for name, code in codes.items() if name in picked}
    for name, code in codes.items():
        func = name.rsplit(".", 1)[-1].split("__mutmut_")[0]
        judged = equivalent.get(name)
        if judged is not None and judged[0] != hashes.get(func):
            survivors.append(f"{name} (stale equivalence: the function changed)")
            judged = None
        status = ("equivalent" if judged else "docs only" if name in docs
                  else STATUS.get(code, "suspicious"))
        counts[status] += 1
        if status in ("survived", "no tests", "suspicious"):
            survivors.append(name)
    counts["mutants"] = len(codes)
    return counts, survivors


def _tallied(c: Counter) -> tuple[int, int]:
    """``(killed, judged)``: the killed (timed-out, crashed) mutants and those that count."""
    judged = c["mutants"] - c["equivalent"] - c["docs only"] - c["not checked"] - c["skipped"]
    return c["killed"] + c["timeout"] + c["segfault"], judged


def score(c: Counter) -> float | None:
    """Killed (and timed-out) mutants over the mutants that count; None when none count."""
    killed, judged = _tallied(c)
    return None if judged <= 0 else killed / judged


def wilson(killed: int, judged: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``killed / judged``."""
    p = killed / judged
    centre = (p + z * z / (2 * judged)) / (1 + z * z / judged)
    half = z * math.sqrt(p * (1 - p) / judged + z * z / (4 * judged * judged)) \
        / (1 + z * z / judged)
    return centre - half, centre + half


def _row(name: str, c: Counter, interval: bool = False) -> str:
    s = score(c)
    cells = [c["mutants"], c["killed"], c["timeout"], c["survived"] + c["suspicious"],
             c["no tests"], c["equivalent"], c["docs only"], c["not checked"]]
    text = "—" if s is None else f"{100 * s:.1f}%"
    if interval and s is not None:
        lo, hi = wilson(*_tallied(c))
        text += f" ({100 * lo:.0f}–{100 * hi:.0f}%)"
    return "| " + " | ".join([name, *map(str, cells), text]) + " |"


def report(show_survivors: bool) -> str:
    """The Markdown table (and optionally the surviving mutants' names)."""
    eq = equivalents()
    lines = ["| module | mutants | killed | timeout | survived | no tests | equivalent "
             "| docs only | not checked | score |", "|---|---|---|---|---|---|---|---|---|---|"]
    total: Counter = Counter()
    left: dict[str, list[str]] = {}
    for group, (modules, _) in GROUPS.items():
        docs = docs_only(group)
        for mod in modules:
            c, left[mod] = tally(group, mod, eq, docs)
            total.update(c)
            sampled = mod in SAMPLE
            lines.append(_row(f"{mod} (random sample)" if sampled else mod, c, sampled))
    lines.append(_row("**all**", total))
    if show_survivors:
        for mod, names in left.items():
            if names:
                lines += ["", f"Survivors in {mod} ({len(names)}):", ""]
                lines += [f"- `{n}`" for n in names]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run mutmut for some or all groups")
    r.add_argument("groups", nargs="*", metavar="GROUP",
                   help=f"any of {', '.join(GROUPS)} (default: all)")
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    r.add_argument("--again", action="store_true",
                   help="also re-run the surviving mutants (after adding tests for them)")
    p = sub.add_parser("report", help="print the score table")
    p.add_argument("--out", type=Path, help="also write the report to this file")
    p.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        unknown = sorted(set(args.groups) - set(GROUPS))
        if unknown:
            ap.error(f"unknown group {', '.join(unknown)}; the groups are {', '.join(GROUPS)}")
        return run(args.groups or list(GROUPS), args.jobs, args.again)
    text = report(args.survivors)
    sys.stdout.write(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
