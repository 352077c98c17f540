#!/usr/bin/env bash
# On a GPU machine without Node.js (the device machine), from the repository root, with
# .device, .gl and dist carried there (pack.sh makes them), into OUT, most wanted first (issue
# 14's target): the whole sweeps (`npm run bench -- --only whole`: the 110,592-instance grid on
# the kernel and the pool, with the GPU's seconds), the GPU test files, `npm run bench:lanes`
# (both state layouts), then the benchmark's engines and scaling sections (and the crossover).
# Each step has its own time limit, so that a slow one still leaves the others their turn and
# what finished comes back; the defaults add up to 560 s, under the device's 600 s a command. A
# limit of 0 skips its step (a short lease spends its minutes on the steps it names).
#   bench/gpu-machine/run.sh OUT [WHOLE_SECONDS] [TEST_SECONDS] [LANES_SECONDS] [BENCH_SECONDS] [BENCH_BUDGET]
set -uo pipefail
out=${1:?usage: run.sh OUT [WHOLE_SECONDS] [TEST_SECONDS] [LANES_SECONDS] [BENCH_SECONDS] [BENCH_BUDGET]}
whole_seconds=${2:-180}
test_seconds=${3:-140}
lanes_seconds=${4:-80}
bench_seconds=${5:-160}
budget=${6:-20}
# the whole sweeps' budget: the pool's 16 threads take about a minute on the large grid
whole_budget=150
mkdir -p "$out"
cd "$(dirname "$0")/../.."
started=$SECONDS
say() { echo "run.sh [$((SECONDS - started)) s]: $*"; }
skip() { [ "$1" -gt 0 ] && return 1; say "$2: skipped (limit 0)"; }

# The Vulkan loader and GL libraries, unpacked over / (the image has the NVIDIA driver only)
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
# The driver's ICD files live under /usr/local/nvidia there, where the loaders do not look
nv=/usr/local/nvidia/share
[ -f $nv/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=$nv/vulkan/icd.d/nvidia_icd.json
[ -f $nv/glvnd/egl_vendor.d/10_nvidia.json ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/glvnd/egl_vendor.d/10_nvidia.json

# python3's lzma: the image may have no xz
python3 - <<'PY' || exit 1
import lzma, os, shutil, tarfile
os.makedirs('/tmp/node/bin', exist_ok=True)
with lzma.open('.device/node.xz') as src, open('/tmp/node/bin/node', 'wb') as dst:
    shutil.copyfileobj(src, dst)
os.chmod('/tmp/node/bin/node', 0o755)
with tarfile.open('.device/modules.tar.xz') as t:
    t.extractall('.')
PY
export PATH=/tmp/node/bin:$PATH
say "node $(node --version), node_modules unpacked"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
  nproc
  grep -m1 'model name' /proc/cpuinfo
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

# Stop here, and cheaply, if the engine would not find the GPU
node --input-type=module -e '
  const { acquireGpu, adapterWithDriver } = await import("./dist/src/gpu/adapter.js");
  const ctx = await acquireGpu();
  console.log(`adapter: ${adapterWithDriver(ctx)}`);
  ctx.destroy();
' 2>&1 | tee -a "$out/machine.txt"
grep -q '^adapter: .* via vulkan' "$out/machine.txt" || { say "no Vulkan adapter: stopping"; exit 1; }

# Whole sweeps and a hint search on the pool and the kernel: issue 14's H200 target
skip "$whole_seconds" "whole sweeps" || {
say "whole sweeps (limit ${whole_seconds} s, --budget ${whole_budget})"
timeout "$whole_seconds" node dist/bench/engines.js --only whole --budget "$whole_budget" --out "$out" \
  >/dev/null 2>"$out/whole-log.txt"
say "whole sweeps: exit $?"
grep '^|' "$out/latest-whole.md" 2>/dev/null || grep -v vkCreateInstance "$out/whole-log.txt" | tail -20
}

# The GPU test files (and the engine choice), CI=true so that none skips for want of an adapter
skip "$test_seconds" "GPU tests" || {
say "GPU tests (limit ${test_seconds} s)"
# the equivalence matrix has its own config (npm test leaves it out), the rest the default one
CI=true NO_COLOR=1 timeout "$test_seconds" sh -c '
  node node_modules/vitest/vitest.mjs run --config vitest.gpu.config.ts --maxWorkers=8 --reporter=default
  node node_modules/vitest/vitest.mjs run test/gpu-adapter.test.ts test/gpu-smoke.test.ts \
    test/engine-auto.test.ts --maxWorkers=8 --reporter=default' >"$out/gpu-tests.txt" 2>&1
say "GPU tests: exit $?"
pkill -f node_modules/vitest # its workers, when the limit ended it
grep -E '^ *(Test Files|Tests|Duration) ' "$out/gpu-tests.txt"
}

skip "$lanes_seconds" "lanes" || {
say "workgroup sizes and state layouts (limit ${lanes_seconds} s)"
timeout "$lanes_seconds" node dist/bench/lanes.js --out "$out/lanes.md" >/dev/null 2>"$out/lanes-log.txt"
say "lanes: exit $?"
grep '^|' "$out/lanes.md" 2>/dev/null || grep -v vkCreateInstance "$out/lanes-log.txt" | tail -20
}

# The engines and scaling sections; the crossover table starts from the repository's, so the new adapter joins it
skip "$bench_seconds" "benchmark" || {
say "benchmark: engines and scaling (limit ${bench_seconds} s, --budget ${budget})"
cp bench/results/crossover.json "$out/crossover.json"
timeout "$bench_seconds" node dist/bench/engines.js --only engines --only scaling --budget "$budget" --out "$out" --crossover "$out/crossover.json" \
  >/dev/null 2>"$out/bench-log.txt"
say "benchmark: exit $?"
grep -v 'vkCreateInstance\|^bench: .* \.\.\.$' "$out/bench-log.txt" | tail -60
}
