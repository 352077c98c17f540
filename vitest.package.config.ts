// `npm run test:package`: the packed tarball, installed as a user would (vitest.config.ts).
import { defineConfig } from 'vitest/config';
import { LEFT_OUT, shared } from './vitest.config.ts';

export default defineConfig({ test: { ...shared, include: [...LEFT_OUT['npm run test:package']] } });
