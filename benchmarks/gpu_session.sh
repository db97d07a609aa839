#!/usr/bin/env bash
# Measure the GPU targets of the performance issue on a lent GPU machine, a step per call.
#
#   bash benchmarks/gpu_session.sh STEP      STEP: check | table | e2e | profile | all
#
# check  the GPU and CuPy as Python sees them, then the solver tests on every backend (the real
#        "gpu" one included: it skips only where no GPU is usable)
# table  the Table 1 grid for K (default 2): the yardstick (min-cut, or alpha-expansion for K > 2)
#        and ADMM on the CPU and on the GPU; LP left out
# e2e    a photo end to end on the GPU and on the CPU (benchmarks/end_to_end.py)
# profile  where the time of named cases goes (benchmarks/profile_solve.py) on the GPU where one
#        is usable, else the CPU: the printed tables and profile_CASE.pstats
#
# A fresh machine compiles the numba kernels on their first call (about a minute for all of
# them): run `check` first in the same call, so that timed steps after it do not pay for that.
#
# Results go to $OUT (default benchmarks/results/gpu): gpu.txt, tests.log, table1_kK.{json,md,png},
# end_to_end.{json,md}. The machine has numpy, scipy, numba, OpenCV, matplotlib, pytest and
# CuPy but no PyMaxflow and no package index, so carry a wheel of it in .whl (git-ignored; it is
# installed from there when present). Fetch it on a machine with an index, once:
#
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux2014_x86_64 -d .whl PyMaxflow==1.3.2
#
# and run each step with .whl carried. Overrides: PY (interpreter, default python3), K (table's
# labels, default 2), SIZES (table's sizes, default 1e4,1e5,5e5), RUNS (default 5), MEGAPIXELS
# (default 1,24), CASES (profile's, default k2_5e5,k4_5e5,photo24).
set -euo pipefail

step=${1:-all}
cd "$(dirname "$0")/.."
PY=${PY:-python3}
OUT=${OUT:-benchmarks/results/gpu}
SIZES=${SIZES:-1e4,1e5,5e5}
RUNS=${RUNS:-5}
K=${K:-2}
MEGAPIXELS=${MEGAPIXELS:-1,24}
CASES=${CASES:-k2_5e5,k4_5e5,photo24}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

if compgen -G ".whl/*.whl" > /dev/null; then
    site=${TMPDIR:-/tmp}/segapp-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" .whl/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

gpu_methods() {
    # the GPU column only where a GPU is usable, so the same step runs (and is tested) without
    "$PY" -c "from solver import gpu_available; print(',admm-gpu' if gpu_available() else '')"
}

check() {
    { nvidia-smi 2>&1 || echo "nvidia-smi: not found"
      "$PY" -c "import solver, numpy, numba; from solver import gpu_available
print('numpy', numpy.__version__, 'numba', numba.__version__, 'GPU usable:', gpu_available())"
    } | tee "$OUT/gpu.txt"
    "$PY" -m pytest -q -p no:cacheprovider tests/solver 2>&1 | tee "$OUT/tests.log"
}

table() {
    local yardstick=expansion
    [ "$K" = 2 ] && yardstick=mincut
    "$PY" benchmarks/table1.py --k "$K" --sizes "$SIZES" --runs "$RUNS" \
        --methods "$yardstick,admm-cpu$(gpu_methods)" --out "$OUT"
}

profile() {
    local backend=cpu
    [ -n "$(gpu_methods)" ] && backend=gpu
    "$PY" benchmarks/profile_solve.py --cases "$CASES" --backend "$backend" --out "$OUT" \
        | tee "$OUT/profile_$backend.txt"
}

e2e() {
    "$PY" benchmarks/end_to_end.py --megapixels "$MEGAPIXELS" --backends cpu,gpu --out "$OUT"
}

case "$step" in
    check) check ;;
    table) table ;;
    e2e) e2e ;;
    profile) profile ;;
    all) check; table; e2e; profile ;;
    *) echo "gpu_session.sh: unknown step '$step' (expected check, table, e2e, profile or all)" >&2
       exit 2 ;;
esac
