"""tools/mutation.py's bookkeeping: which mutants it sets aside as help text, and its score."""
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import mutation  # noqa: E402

SOURCE = '''
def x_add__mutmut_orig(p):
    p.add_argument("--k", type=int, default=2, help="number of labels")
def x_add__mutmut_1(p):
    p.add_argument("--k", type=int, default=2, help="XXnumber of labelsXX")
def x_add__mutmut_2(p):
    p.add_argument("--k", type=int, default=2)
def x_add__mutmut_3(p):
    p.add_argument("--k", type=int, default=3, help="number of labels")
def x_add__mutmut_4(p):
    p.add_argument("--K", type=int, default=2, help="number of labels")
class C:
    def xǁCǁrun__mutmut_orig(self):
        return self.go(metavar="N", value=1)
    def xǁCǁrun__mutmut_1(self):
        return self.go(metavar=None, value=1)
    def xǁCǁrun__mutmut_2(self):
        return self.go(metavar="N", value=2)
'''


def test_only_text_of_help_description_and_metavar_is_set_aside():
    assert mutation.docs_only_in(SOURCE, "pkg.mod") == {
        "pkg.mod.x_add__mutmut_1", "pkg.mod.x_add__mutmut_2", "pkg.mod.xǁCǁrun__mutmut_1"}


def test_score_leaves_out_what_was_not_judged():
    c = Counter({"mutants": 20, "killed": 12, "timeout": 2, "survived": 2, "equivalent": 1,
                 "docs only": 2, "not checked": 1})
    assert mutation.score(c) == 14 / 16
    assert mutation.score(Counter({"mutants": 3, "docs only": 3})) is None


def test_wilson_interval():
    lo, hi = mutation.wilson(8, 10)  # the textbook example: 0.490 to 0.943
    assert (round(lo, 3), round(hi, 3)) == (0.49, 0.943)
    assert mutation.wilson(0, 12)[0] == 0.0 and abs(mutation.wilson(12, 12)[1] - 1.0) < 1e-12


def test_a_sample_is_fixed_by_the_module_and_leaves_out_help_text():
    module = "segapp/ui/runctl.py"
    names = [f"segapp.ui.runctl.x_f__mutmut_{i}" for i in range(1, 401)]
    docs = set(names[:50])
    picked = mutation.sample("app", module, names + ["segapp.ui.frames.x_g__mutmut_1"], docs)
    assert len(picked) == mutation.SAMPLE[module] and not picked & docs
    assert picked <= set(names)
    assert mutation.sample("app", module, list(reversed(names)), docs) == picked
    assert mutation.sample("cli", "segapp/cli/segment.py", names, docs) is None


def test_an_equivalence_judged_on_another_version_of_its_function_lapses(tmp_path, monkeypatch):
    """Only judgements on the function as mutmut now sees it (its hash in the ``.meta`` file)
    keep a mutant out of the run; the others are run again, as their mutant may not even be
    the one judged (mutmut numbers a function's mutants afresh when it changes)."""
    monkeypatch.setattr(mutation, "WORK", tmp_path)
    monkeypatch.setitem(mutation.GROUPS, "g", (["pkg/mod.py"], []))
    meta = tmp_path / "g" / "mutants" / "pkg" / "mod.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text('{"exit_code_by_key": {}, "hash_by_function_name": '
                    '{"x_run": "aaa", "x_other": "bbb"}}')
    judged = {"pkg.mod.x_run__mutmut_3": ("aaa", "same"),
              "pkg.mod.x_run__mutmut_4": ("old", "judged before a change"),
              "pkg.mod.x_other__mutmut_1": ("bbb", "same"),
              "pkg.gone.x_f__mutmut_1": ("ccc", "a module no longer mutated")}
    assert mutation.fresh_equivalents("g", judged) == {"pkg.mod.x_run__mutmut_3",
                                                       "pkg.mod.x_other__mutmut_1"}


def test_every_module_and_test_a_group_names_is_in_the_tree():
    """A group's tests are files (``path`` or ``path::test``) of the tree: a test file moved or
    renamed without its entry would leave the group's mutants to fewer tests, unseen."""
    missing = []
    for group, (modules, tests) in mutation.GROUPS.items():
        for module in modules:
            if not (mutation.ROOT / module).is_file():
                missing.append(f"{group}: {module}")
        for test in tests:
            path, _, name = test.partition("::")
            file = mutation.ROOT / path
            if not file.is_file() or (name and f"def {name}(" not in file.read_text()):
                missing.append(f"{group}: {test}")
    missing += [m for m in mutation.SAMPLE if not (mutation.ROOT / m).is_file()]
    assert missing == []
