"""`first_compile_notice`: one call at the first real numba compile, none for cached kernels."""

import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from solver.backend.compile_notice import first_compile_notice


def _fresh_kernel():
    @numba.njit
    def add(a, b):
        return a + b
    return add


def test_fires_once_at_the_first_compile_inside_the_block():
    calls = []
    kernel, other = _fresh_kernel(), _fresh_kernel()
    with first_compile_notice(lambda: calls.append(1)) as seen:
        assert not seen.fired
        kernel(1, 2)
        kernel(1.0, 2.0)  # a second signature, and a second kernel: still one call
        other(1, 2)
    assert calls == [1] and seen.fired


def test_silent_without_a_compile_and_after_the_block():
    kernel = _fresh_kernel()
    kernel(1, 2)
    calls = []
    with first_compile_notice(lambda: calls.append(1)) as seen:
        kernel(3, 4)  # already compiled
    assert calls == [] and not seen.fired
    kernel(np.zeros(2), np.ones(2))  # compiles, but the listener is gone
    assert calls == []


@pytest.mark.slow
def test_a_kernel_loaded_from_the_disk_cache_does_not_count(tmp_path):
    (tmp_path / "cached_mod.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def triple(a):
            return 3 * a
    """))
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from solver.backend.compile_notice import first_compile_notice
        import cached_mod
        with first_compile_notice(lambda: None) as seen:
            assert cached_mod.triple(2) == 6
        print("compiled" if seen.fired else "cached")
    """)
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["compiled", "cached"], [r.stderr for r in runs]
