import { expect, it } from 'vitest';
import { ERR, INTERVALS, INTERVAL_WORDS, IV, P, R } from '../src/engine/layout.js';
import { CASES, RUN_MS, SEEDS, describeEquivalence, sum } from './gpu-equivalence-support.js';
import { configFor, pastHorizon } from './support.js';
import { OFFLOAD_STORIES, traceProblem, wholeWindow } from './trace-support.js';

describeEquivalence('the WGSL engine against the reference engine, bit for bit: seed problems and M/M/c', (expectSame) => {
  for (const file of ['hot-prefix', 'coding-agents'] as const) {
    for (const caseName of CASES) {
      it(`${file}, ${caseName}: ${SEEDS[file]} seeds`, () => expectSame(configFor(file, [], caseName).config, SEEDS[file]), RUN_MS);
    }
  }

  it(`mmc (M/M/4): ${SEEDS.mmc} seeds`, () => expectSame(configFor('mmc').config, SEEDS.mmc), RUN_MS);

  // BLIS's alphas on a catalogue profile (issue 27): calls on their way into a replica's queue,
  // tokens processed after their steps (for a task, before its tool call), base and perSeq held
  // to the nanosecond; and a replica reset while calls are on their way in (their queueing time
  // set to 0.3 s, so that many are), which refuses them when they arrive
  const ALPHAS = 'gpu.profile=llama-3.1-8b-instruct/h100/tp1';
  for (const [file, caseName] of [['hot-prefix', 'as-given'], ['hot-prefix', 'server-dies'], ['coding-agents', 'slow-dependency']] as const) {
    it(`${file}, ${caseName}, with BLIS's alphas: ${SEEDS.scenarios * 2} seeds`, () => {
      const { config } = configFor(file, [ALPHAS], caseName);
      if (caseName === 'server-dies') config.params[P.QUEUE_DELAY_US] = 300_000;
      return expectSame(config, SEEDS.scenarios * 2);
    }, RUN_MS);
  }

  // The KV offload tier beyond GPU memory (issue 29), in shapes of its own: the conversation trace
  // with a tier, where prefix affinity sends a conversation's turns minutes apart back to the
  // replica whose tier holds their blocks, and the tier's rules (test/kv-offload.test.ts) on a
  // small trace; agents' sessions back from a tier, with a replica reset that loses it
  const OFFLOAD = ['gpu.offload.tokens=500000', 'gpu.offload.bandwidth=25GB/s'];
  // the largest kernel shapes: with their compile, the trace's test took 189 s and the agents' 406 s
  // on llvmpipe (2 cores, one test at a time); CI runs two files at once: a limit, so room
  const OFFLOAD_RUN_MS = 3 * RUN_MS;
  // (a minute of the trace, on half the GPU memory, so that every seed loads from its tier)
  it(`conversation-trace, as-given, with a KV offload tier: ${SEEDS.offload} seeds`, async () => {
    const { config } = configFor('conversation-trace', [...OFFLOAD, 'traffic.duration=40s', 'traffic.warmup=20s', 'gpu.kvTokens=200000']);
    const records = await expectSame(config, SEEDS.offload);
    for (let i = 0; i < SEEDS.offload; i++) expect(records[i * config.resultWords + R.OFFLOAD_TOKENS]).toBeGreaterThan(0);
  }, OFFLOAD_RUN_MS);

  for (const [name, story] of Object.entries(OFFLOAD_STORIES)) {
    it(`the tier's rules: ${name}: 3 seeds`, () => expectSame(traceProblem(`gpu-${name}`, story.lines, wholeWindow(story.lines), story.gpu).config, 3), RUN_MS);
  }

  it(`coding-agents, server-dies, with a KV offload tier: ${SEEDS.scenarios} seeds`, async () => {
    const { config } = configFor('coding-agents', ['gpu.kvTokens=60000', 'router.policy=bounded-affinity', ...OFFLOAD, 'gpu.offload.bytesPerToken=131072'], 'server-dies');
    const records = await expectSame(config, SEEDS.scenarios);
    expect(sum(config, records, R.OFFLOAD_TOKENS)).toBeGreaterThan(0);
  }, OFFLOAD_RUN_MS);

  // KV taken as tokens grow, with preemption (gpu.kv incremental, issue 29), in shapes of its own:
  // a replica of 20,000 tokens under least-loaded routing preempts dozens of calls a seed, with a
  // replica reset; and four tenants' prompts on 40,000 tokens with an offload tier, which takes
  // the prompts that preemptions and the other tenants evict and gives them back
  const INCREMENTAL = ['gpu.kv=incremental', 'gpu.kvTokens=20000', 'gpu.slots=16', 'router.policy=least-loaded', 'workload.output=200', 'traffic.duration=6s', 'traffic.warmup=2s'];
  it(`hot-prefix, server-dies, with incremental KV and preemption: ${SEEDS.scenarios} seeds`, async () => {
    const { config } = configFor('hot-prefix', INCREMENTAL, 'server-dies');
    const records = await expectSame(config, SEEDS.scenarios);
    expect(sum(config, records, R.PREEMPTIONS)).toBeGreaterThan(SEEDS.scenarios * 10);
  }, OFFLOAD_RUN_MS);

  it(`multi-tenant-prefixes, as-given, with incremental KV and a KV offload tier: ${SEEDS.scenarios} seeds`, async () => {
    const sets = ['gpu.kv=incremental', 'gpu.kvTokens=40000', 'gpu.slots=16', 'router.policy=least-loaded', 'workload.output=400', 'traffic.duration=20s', 'traffic.warmup=4s'];
    const { config } = configFor('multi-tenant-prefixes', [...sets, ...OFFLOAD, 'gpu.offload.bytesPerToken=131072']);
    const records = await expectSame(config, SEEDS.scenarios);
    expect(sum(config, records, R.PREEMPTIONS)).toBeGreaterThan(SEEDS.scenarios * 10);
    expect(sum(config, records, R.OFFLOAD_TOKENS)).toBeGreaterThan(0);
  }, OFFLOAD_RUN_MS);

  // Prefill/decode disaggregation (issue 29), in shapes of its own: hot prefix on 2 prefill and 4
  // decode replicas of their own profile, slots and KV, incremental KV that preempts on the decode
  // side, the decode pool routing cache-aware, with a replica reset; and agents' sessions on 3 prefill and 5 decode replicas,
  // reserve, round-robin, server-dies resetting a replica of either pool (drawn by the seed)
  const DISAGGREGATED = ['gpu.disaggregation.bytesPerToken=131072', 'gpu.disaggregation.bandwidth=10GB/s'];
  // the decode replicas' own profile (70b-h100's slower steps), slots and KV
  const DECODE_POOL = ['gpu.disaggregation.decode.profile=70b-h100', 'gpu.disaggregation.decode.slots=24', 'gpu.disaggregation.decode.kvTokens=26000'];
  it(`hot-prefix, server-dies, disaggregated, incremental KV: ${SEEDS.scenarios} seeds`, async () => {
    const sets = [...INCREMENTAL, ...DISAGGREGATED, 'gpu.replicas=6', 'gpu.disaggregation.prefill=2', 'gpu.disaggregation.policy=cache-aware', ...DECODE_POOL];
    const { config } = configFor('hot-prefix', sets, 'server-dies');
    const records = await expectSame(config, SEEDS.scenarios);
    expect(sum(config, records, R.TRANSFERS)).toBeGreaterThan(SEEDS.scenarios * 100);
    expect(sum(config, records, R.PREEMPTIONS)).toBeGreaterThan(SEEDS.scenarios * 10);
  }, OFFLOAD_RUN_MS);

  it(`coding-agents, server-dies (a replica of either pool), disaggregated: ${SEEDS.scenarios} seeds`, async () => {
    const sets = [...DISAGGREGATED, 'gpu.disaggregation.prefill=3', 'gpu.disaggregation.policy=round-robin', 'traffic.duration=20s', 'traffic.warmup=10s'];
    const { config } = configFor('coding-agents', sets, 'server-dies');
    const records = await expectSame(config, SEEDS.scenarios);
    expect(sum(config, records, R.TRANSFERS)).toBeGreaterThan(SEEDS.scenarios * 10);
  }, OFFLOAD_RUN_MS);

  // Overloaded (issue 12), in M/M/c's shape: a full job table refuses arrivals from the warmup
  // on; an event heap too small (a capacity sized too small) stops most instances mid-run.
  it(`mmc, M/M/2 at 200% load: ${SEEDS.mmc} seeds`, async () => {
    const { config } = configFor('mmc', ['server.slots=2', 'traffic.rate=40']);
    const records = await expectSame(config, SEEDS.mmc);
    expect(sum(config, records, R.OVERLOADED)).toBeGreaterThan(sum(config, records, R.ARRIVALS) / 3);
  }, RUN_MS);

  it(`mmc, its event heap too small: ${SEEDS.mmc} seeds`, async () => {
    const { config } = configFor('mmc', ['server.timeout=1s']);
    config.params[P.HEAP_CAP] = 55;
    const records = await expectSame(config, SEEDS.mmc);
    expect(sum(config, records, R.OVERLOADED)).toBeGreaterThan(0);
  }, RUN_MS);

  // u32 overflows (test/u32-overflow.test.ts): time past 2^32 us stops every instance with
  // ERR.HORIZON, where a wrapped sum would have sent WGSL's time backwards and not TypeScript's
  it('an M/M/30 queue still draining when u32 microseconds end: 8 seeds', async () => {
    const { config } = pastHorizon();
    const records = await expectSame(config, 8);
    for (let i = 0; i < 8; i++) expect(records[i * config.resultWords + R.OVERLOAD]).toBe(ERR.HORIZON);
    // the measured window's intervals (issue 27) are in the records compared: sojourns of
    // minutes carry an interval's sum into its high word, in both engines alike
    const high = (i: number, k: number): number => records[i * config.resultWords + config.intervals + k * INTERVAL_WORDS + IV.SOJOURN_SUM_HI]!;
    expect(Array.from({ length: 8 * INTERVALS }, (_, n) => high(Math.floor(n / INTERVALS), n % INTERVALS)).some((h) => h > 0)).toBe(true);
  }, RUN_MS);

  // Bounded affinity's cap with c x (calls in flight + 1) past 2^32 (WGSL wrapped it, TypeScript
  // did not). No problem file reaches that (c <= 64, 50,000 calls an instance), so c is set in
  // the params, as the heap's capacity is above: c = 2,000 over 2 replicas and thousands of calls
  // queued. The exact cap never binds; the wrapped one did.
  it('hot-prefix, bounded-affinity, c x calls in flight past 2^32: 4 seeds', async () => {
    const { config } = configFor('hot-prefix', [
      'router.policy=bounded-affinity', 'gpu.replicas=2', 'app.slots=3000', 'traffic.rate=2000', 'traffic.warmup=0s', 'traffic.duration=2s',
    ]);
    config.params[P.BOUNDED_LOAD_MILLI] = 2_000_000;
    const records = await expectSame(config, 4);
    // c x (calls in flight + 1) passed 2^32: one replica alone queued more than 2^32 / c calls
    for (let i = 0; i < 4; i++) expect(records[i * config.resultWords + R.LONGEST_QUEUE]).toBeGreaterThan(2 ** 32 / 2_000_000);
  }, RUN_MS);
});
