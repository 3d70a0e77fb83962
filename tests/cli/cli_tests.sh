#!/usr/bin/env bash
# CLI tests: run the built `sparsenm` binary on a small generated model and check output, exit
# codes and error messages. Usage: cli_tests.sh SPARSENM WORKDIR CASE   (ctest runs each CASE).
# Exit 77 = skipped (ctest SKIP_RETURN_CODE), with the reason on stdout.
set -uo pipefail
bin=$1
work=$2
case_name=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
# run EXPECTED_CODE CMD...: runs, keeps stdout in out.txt and stderr in err.txt, checks the code.
run() {
  local want=$1; shift
  "$@" >out.txt 2>err.txt
  local got=$?
  if [[ $got -ne $want ]]; then
    echo "--- stdout"; cat out.txt; echo "--- stderr"; cat err.txt
    fail "'$*' exited $got, expected $want"
  fi
}
expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "'$2' not in $1"; }
}

gen() { run 0 "$bin" gen-test-model model.safetensors --seed 3; }

case "$case_name" in
  version)
    run 0 "$bin" --version
    expect_in out.txt "sparsenm 0."
    ;;
  help)
    run 0 "$bin" --help
    for c in prune inspect demo bench; do expect_in out.txt "$c"; done
    if grep -q gen-test-model out.txt; then fail "hidden command listed in --help"; fi
    run 0 "$bin" prune --help
    expect_in out.txt "--pattern"
    ;;
  prune)
    gen
    run 0 "$bin" prune model.safetensors -o pruned.safetensors --pattern 2:8 --exclude 'embed|lm_head'
    expect_in out.txt "total (6 tensors)"
    expect_in out.txt "model.layers.0.mlp.down_proj.weight"
    expect_in out.txt "75.0%"
    expect_in out.txt "pruned 6 of 12 tensors to 2:8; 6 copied unchanged"
    expect_in err.txt "pruning 6/6"   # not a TTY: one line per tensor
    [[ -f pruned.safetensors ]] || fail "no output file"
    ls -a | grep -q 'tmp-' && fail "temporary file left behind"
    run 0 "$bin" inspect pruned.safetensors
    expect_in out.txt "6 condensed weights:"
    expect_in out.txt "model.layers.0.self_attn.q_proj.weight.indices"
    expect_in out.txt "position_ids"
    expect_in out.txt "format = pt"
    # Pruning the output again must not prune condensed parts a second time.
    run 0 "$bin" prune pruned.safetensors -o again.safetensors --pattern 2:4 --include 'q_proj'
    expect_in out.txt "pruned 0 of"
    expect_in err.txt "no tensor selected"
    ;;
  patterns)
    gen
    for p in 2:4 1:8 3:16 2:8/vw4 1:4/bw2x4 32:2:8 2:4/hw; do
      run 0 "$bin" prune model.safetensors -o p.safetensors --pattern "$p"
      run 0 "$bin" inspect --json p.safetensors
      python3 - "$p" <<'PY' || fail "inspect --json for $p"
import json, sys
j = json.load(open("out.txt"))
pat = sys.argv[1]
c = j["condensed"]
assert len(c) == 8, len(c)
for e in c:
    assert e["total_bytes"] == e["value_bytes"] + e["index_bytes"] + e["colloc_bytes"], e
    assert 0 < e["ratio"] < 1.0, e
    assert (e["colloc_bytes"] > 0) == (e["granularity"] == "vnm"), e
names = {t["name"] for t in j["tensors"]}
assert "position_ids" in names and "model.norm.weight" in names
assert all(e["name"] + ".values" in names for e in c)
PY
    done
    ;;
  bad_input)
    run 1 "$bin" inspect missing.safetensors
    expect_in err.txt "sparsenm: error: cannot open 'missing.safetensors'"
    run 1 "$bin" prune missing.safetensors -o out.safetensors --pattern 2:8
    expect_in err.txt "sparsenm: error:"
    echo "not a safetensors file, just text" > junk.safetensors
    run 1 "$bin" inspect junk.safetensors
    expect_in err.txt "sparsenm: error: safetensors:"
    gen
    run 2 "$bin" prune model.safetensors -o out.safetensors --pattern 2:9x
    expect_in err.txt "sparsenm: error:"
    expect_in err.txt "--pattern"
    run 2 "$bin" prune model.safetensors -o out.safetensors --pattern 8:4
    expect_in err.txt "--pattern"
    run 2 "$bin" prune model.safetensors -o out.safetensors
    expect_in err.txt "--pattern"
    run 2 "$bin" prune model.safetensors -o out.safetensors --pattern 2:8 --include '('
    expect_in err.txt "--include"
    [[ -e out.safetensors ]] && fail "output written despite a usage error"
    run 1 "$bin" prune model.safetensors -o no/such/dir/out.safetensors --pattern 2:8
    expect_in err.txt "no/such/dir/out.safetensors"
    run 2 "$bin" frobnicate
    expect_in err.txt "sparsenm: error:"
    run 2 "$bin"
    run 2 "$bin" inspect model.safetensors --no-such-flag
    run 2 "$bin" demo --patterns 2:4,nope
    expect_in err.txt "--patterns"
    run 2 "$bin" demo --backend tpu
    expect_in err.txt "--backend"
    run 2 "$bin" bench --shapes 12by4
    expect_in err.txt "--shapes"
    ;;
  python_interop)
    if ! python3 -c "import safetensors, numpy" 2>/dev/null; then
      echo "SKIPPED: python3 with the safetensors and numpy packages is not available (scripts/setup installs them)"
      exit 77
    fi
    gen
    run 0 "$bin" prune model.safetensors -o pruned.safetensors --pattern 2:8
    python3 "$here/check_python.py" model.safetensors pruned.safetensors || fail "python cross-check"
    # A file written by Python's safetensors is read by ours.
    python3 -c "
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(0)
save_file({'a.weight': rng.standard_normal((20, 36)).astype(np.float16),
           'b': np.arange(5, dtype=np.int64), 's': np.array(2.5, dtype=np.float32)},
          'py.safetensors', metadata={'origin': 'python'})" || fail "python writer"
    run 0 "$bin" inspect py.safetensors
    expect_in out.txt "a.weight"
    expect_in out.txt "origin = python"
    run 0 "$bin" prune py.safetensors -o py-pruned.safetensors --pattern 2:8
    expect_in out.txt "pruned 1 of 3 tensors"
    python3 "$here/check_python.py" py.safetensors py-pruned.safetensors || fail "python cross-check (python input)"
    ;;
  demo)
    run 0 "$bin" demo --backend cpu --shapes 64x96,40x37 --patterns 2:4,2:8,32:2:8,2:8/vw4,1:2/bw2x2 --m 1,3 --reps 1
    expect_in out.txt "20 of 20 checks passed"
    for d in f32 bf16; do
      run 0 "$bin" demo --backend cpu --shapes 33x70 --patterns 2:8,64:2:8 --m 2 --dtype $d --reps 1 --check-rows 0
      expect_in out.txt "2 of 2 checks passed"
    done
    ;;
  demo_cuda)
    # The main job on the CUDA backend: every plan's automatic kernel choice, checked on every row.
    "$bin" demo --backend cuda --shapes 256x384,97x130 --patterns 2:4,2:8,128:2:8,2:8/vw4 --m 1,8 --reps 2 \
      >out.txt 2>err.txt
    got=$?
    if [[ $got -ne 0 ]] && grep -qiE "no usable cuda device|no cuda device" err.txt out.txt; then
      echo "skipped: no CUDA device ($(head -1 err.txt))"; exit 77
    fi
    [[ $got -eq 0 ]] || { cat out.txt err.txt; fail "demo --backend cuda exited $got"; }
    expect_in out.txt "16 of 16 checks passed"
    expect_in out.txt "cuda:"
    ;;
  bench)
    run 0 "$bin" bench --list
    expect_in out.txt "prune"
    run 0 "$bin" bench --suite prune --quick --shapes 64x96,33x70 --patterns 2:8 --dtypes bf16 --reps 1 --out results
    ls results/*.jsonl >/dev/null 2>&1 || fail "no JSONL written"
    python3 - <<'PY' || fail "bench rows"
import glob, json
rows = [json.loads(l) for f in glob.glob("results/*.jsonl") for l in open(f) if l.strip()]
assert {(r["n"], r["k"]) for r in rows} == {(64, 96), (33, 70)}, rows
assert all(r["suite"] == "prune" and r["pattern"] == "2:8" and r["dtype"] == "bf16" for r in rows), rows
PY
    run 2 "$bin" bench --suite nope
    expect_in err.txt "--suite"
    run 2 "$bin" bench --dtypes int4
    expect_in err.txt "--dtypes"
    run 2 "$bin" bench --reps 0
    expect_in err.txt "--reps"
    run 2 "$bin" bench --m 0
    expect_in err.txt "--m"
    ;;
  *)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS: $case_name"
