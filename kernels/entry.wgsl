// The compute entry points: one invocation per instance of a batch, its slot in the state
// buffer the invocation index. src/gpu/engine.ts runs initInstances once, advanceInstances
// once per time window (each its own submit), then gatherResults for a compact readback.

struct Run {
  // instances in the batch; slot s simulates instance first + s of base seed `seed`
  count: u32,
  first: u32,
  seed: u32,
  // advanceInstances handles the events before this time
  until: u32,
}

@group(0) @binding(BINDING_RUN) var<uniform> run: Run;
// Instances done by the end of this window (the host clears it first): progress, early exit.
@group(0) @binding(BINDING_DONE) var<storage, read_write> doneCount: atomic<u32>;
// Per slot, 1 + result words apart: the error word (G_ERROR), then the result record.
@group(0) @binding(BINDING_RESULTS) var<storage, read_write> results: array<u32>;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn initInstances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  init(slot, run.seed, run.first + slot);
}

@compute @workgroup_size(WG)
fn advanceInstances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  if (advance(slot, run.until)) { atomicAdd(&doneCount, 1u); }
}

@compute @workgroup_size(WG)
fn gatherResults(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  bind(slot);
  let words = pr[P_STATE_WORDS] - pr[P_OFF_RESULT];
  let out = slot * (words + 1u);
  results[out] = st[sb + G_ERROR];
  for (var i = 0u; i < words; i++) {
    results[out + 1u + i] = st[sb + pr[P_OFF_RESULT] + i];
  }
}
