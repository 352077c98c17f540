// The compute entry points: one invocation per instance of a batch, its slot in the state
// buffer the invocation index. src/gpu/engine.ts runs initInstances once, advanceInstances
// for each time window until no instance has events left in it, then gatherResults for a
// compact readback.

struct Run {
  // instances in the batch (slots)
  count: u32,
  // words from one slot's state record to the next (the batch's largest configuration's)
  stride: u32,
  // words from one slot's results to the next (the batch's largest result record)
  resultStride: u32,
  // advanceInstances handles the events before this time, at most `budget` of them
  until: u32,
  budget: u32,
  // always 2: a loop bound the shader compiler cannot see (loopCapHit)
  two: u32,
}

// Cleared by the host before each advance dispatch.
struct Counters {
  // instances done
  done: atomic<u32>,
  // instances that spent their budget and may have events left before `until`
  pending: atomic<u32>,
  // invocations that hit the adapter's loop cap: their batch's state is void
  capped: atomic<u32>,
}

@group(0) @binding(BINDING_RUN) var<uniform> run: Run;
@group(0) @binding(BINDING_COUNTERS) var<storage, read_write> counters: Counters;
// Per slot, its result record (the tail of its state), run.resultStride words apart.
@group(0) @binding(BINDING_RESULTS) var<storage, read_write> results: array<u32>;
// Per slot, SLOT_WORDS: where its configuration's params start, its base seed, its instance.
@group(0) @binding(BINDING_SLOTS) var<storage, read> slots: array<u32>;

override WG: u32 = 64u;

fn slotWord(slot: u32, field: u32) -> u32 {
  return slots[slot * SLOT_WORDS + field];
}

// llvmpipe ends every loop early once an invocation has run 65,535 loop iterations, and from
// then on runs each loop once: a two-iteration loop that runs once says this one hit the cap.
fn loopCapHit() -> bool {
  var n = 0u;
  for (var i = 0u; i < run.two; i++) { n += 1u; }
  return n != run.two;
}

@compute @workgroup_size(WG)
fn initInstances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  init(slotWord(slot, SLOT_PARAMS), slot, slotWord(slot, SLOT_SEED), slotWord(slot, SLOT_INSTANCE));
  if (loopCapHit()) { atomicAdd(&counters.capped, 1u); }
}

@compute @workgroup_size(WG)
fn advanceInstances(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  evBudget = run.budget;
  if (advance(slotWord(slot, SLOT_PARAMS), slot, run.until)) { atomicAdd(&counters.done, 1u); }
  else if (evBudget == 0u) { atomicAdd(&counters.pending, 1u); }
  if (loopCapHit()) { atomicAdd(&counters.capped, 1u); }
}

@compute @workgroup_size(WG)
fn gatherResults(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let slot = linear_index(gid, nwg, WG);
  if (slot >= run.count) { return; }
  bind(slotWord(slot, SLOT_PARAMS), slot);
  let words = param(P_STATE_WORDS) - param(P_OFF_RESULT);
  let out = slot * run.resultStride;
  for (var i = 0u; i < words; i++) {
    results[out + i] = st[ix(rs + i)];
  }
}
