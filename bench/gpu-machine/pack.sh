#!/usr/bin/env bash
# Packs what run.sh needs on a GPU machine that has no Node.js and no package registry (the
# device machine: bench/results/h200/): this machine's node binary, node_modules with only
# the linux-x64 Dawn binary, the built project, and the Vulkan loader and GL libraries as
# Debian packages. Everything lands in .device/ and .gl/ (both git-ignored through
# .git/info/exclude), under the device's 64 MiB carry limit:
#   bench/gpu-machine/pack.sh && du -sh .device .gl dist
set -euo pipefail
cd "$(dirname "$0")/../.."
for d in .device .gl; do grep -qx "/$d/" .git/info/exclude || echo "/$d/" >>.git/info/exclude; done
npm run build --silent
rm -rf .device .gl
mkdir -p .device .gl
xz -T0 -6 -c "$(command -v node)" >.device/node.xz
# what neither the GPU tests nor the benchmark load: other platforms' Dawn, the compiler, the
# browser, polars (a results-format test's reader: a 98 MB binary)
tar -cf - \
  --exclude='node_modules/webgpu/dist/darwin-*' --exclude='node_modules/webgpu/dist/win32-*' \
  --exclude='node_modules/webgpu/dist/linux-arm64' --exclude='node_modules/typescript' \
  --exclude='node_modules/playwright-core' --exclude='node_modules/@types' --exclude='node_modules/.cache' \
  --exclude='node_modules/nodejs-polars*' \
  node_modules | xz -T0 -6 >.device/modules.tar.xz
# amd64 packages whatever this machine is; their own lists, so the system's stay untouched
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
mkdir -p /tmp/amd64/partial
apt-get "${o[@]}" update -qq
(cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
du -sh .device .gl dist
