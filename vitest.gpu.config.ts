// `npm run test:gpu`: the GPU equivalence matrix that `npm test` leaves out (vitest.config.ts).
import { defineConfig } from 'vitest/config';
import { LEFT_OUT, shared } from './vitest.config.ts';

export default defineConfig({ test: { ...shared, include: [...LEFT_OUT['npm run test:gpu']] } });
