/** The GPU profiles a problem's gpu.profile may name, with BLIS's lone-request TPOT and servesim's and the roofline floor under each, and the GPU types' list prices. */
import type { FastifyInstance } from 'fastify';
import { listProfiles } from '../problem/profiles.js';

export function registerProfileRoutes(app: FastifyInstance): void {
  app.get(
    '/v1/profiles',
    {
      config: {
        doc: {
          summary:
            'The GPU profiles gpu.profile may name (built-in assumptions and the published catalogue, each with its source, ' +
            'what the engines run, BLIS\'s alphas among it, the rounding to their units, a lone request\'s time per output token in BLIS and in servesim, ' +
            'and the roofline floor under it with which fits it raised), and the GPU types\' list prices per GPU-hour; as `servesim profiles -f json`',
          responses: { 200: { description: '{profiles: [...], prices: [...], shadowed: [...]}', types: ['application/json'] } },
        },
      },
    },
    async () => listProfiles(),
  );
}
