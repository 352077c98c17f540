// ESLint (flat config): the recommended rules of ESLint and typescript-eslint (syntax only, no
// type information: the type check is tsc's, `npm run typecheck`), no import cycles, the
// layers of docs/architecture.md (a folder of src/ imports only the folders below it), and the
// house style's spacing and punctuation, which `npm run format` (eslint --fix) applies.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/**
 * src/'s folders from the bottom up; a folder imports those on lower rows, never one on its own
 * row or above (a row of two: neither imports the other). The files at the top of src/
 * (errors.ts, slices.ts, version.ts, package-root.ts, optional-package.ts) sit below them all.
 */
const LAYERS = [
  ['model'], // the types and arithmetic of problems and results
  ['problem'], // YAML to a typed Problem
  ['engine'], // the reference engine and what both engines compile from a problem
  ['gpu', 'pool'], // the WGSL kernel's host side; the reference engine on all cores
  ['run'], // cases x seeds on an engine
  ['sweep'], // grids of configurations, and their files
  ['hint'], // the search for the cheapest passing configuration
  ['capacity'], // the search for each design's highest passing load (uses the hint's cost and margins)
  ['report'], // the HTML report of a sweep or a hint
  ['service'], // the HTTP API
  ['queue'], // sweeps shared out over redis (fills the service's job dispatcher)
  ['cli'], // the commands, which put all of it together
];

const layerZones = [
  {
    target: 'src/*.ts',
    from: LAYERS.flat().map((dir) => `src/${dir}`),
    message: 'The files at the top of src/ are below every layer (eslint.config.js, LAYERS).',
  },
  ...LAYERS.flatMap((row, rank) =>
    row.map((dir) => ({
      target: `src/${dir}`,
      from: [...row.filter((d) => d !== dir), ...LAYERS.slice(rank + 1).flat()].map((d) => `src/${d}`),
      message: `src/${dir} may import only the layers below it (eslint.config.js, LAYERS; docs/architecture.md).`,
    })),
  ),
  { target: 'src', from: ['test', 'bench'], message: 'The program does not import its tests or benchmarks.' },
].filter((zone) => zone.from.length > 0);

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'test/output/', 'bench/results/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    plugins: { 'import-x': importX },
    settings: {
      // NodeNext: `./x.js` in a source file names `./x.ts`
      'import-x/resolver-next': [createNodeResolver({ extensionAlias: { '.js': ['.ts', '.js'] } })],
      // what no-cycle follows: the project's TypeScript (and JavaScript), parsed as such
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      // packages cannot import the project back; following them into node_modules took 50 s
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: layerZones }],
      // a leading _ names what a destructuring leaves out or a signature needs but does not use
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    // The formatting that the code already keeps, as rules `eslint --fix` applies. Line breaks
    // and indentation stay the author's: a formatter that reflows them (Prettier) would rewrite
    // 130 of the 200 files.
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/semi': ['error', 'always'],
      '@stylistic/member-delimiter-style': 'error',
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      '@stylistic/comma-spacing': 'error',
      '@stylistic/key-spacing': 'error',
      '@stylistic/keyword-spacing': 'error',
      '@stylistic/space-infix-ops': 'error',
      '@stylistic/space-before-blocks': 'error',
      '@stylistic/space-before-function-paren': ['error', { anonymous: 'always', named: 'never', asyncArrow: 'always' }],
      '@stylistic/semi-spacing': 'error',
      '@stylistic/type-annotation-spacing': 'error',
      '@stylistic/block-spacing': 'error',
      '@stylistic/computed-property-spacing': 'error',
      '@stylistic/brace-style': ['error', '1tbs', { allowSingleLine: true }],
      '@stylistic/arrow-parens': ['error', 'always'],
      '@stylistic/quote-props': ['error', 'as-needed'],
      '@stylistic/spaced-comment': 'error',
      '@stylistic/no-multi-spaces': 'error',
      '@stylistic/no-multiple-empty-lines': ['error', { max: 1 }],
      '@stylistic/no-trailing-spaces': 'error',
      '@stylistic/no-tabs': 'error',
      '@stylistic/eol-last': 'error',
      '@stylistic/linebreak-style': ['error', 'unix'],
    },
  },
  {
    // the reference engine's module variables are `var` on purpose: V8 checks a `let`'s temporal
    // dead zone at every read from a function (the comment above them in simulate.ts)
    files: ['src/engine/simulate.ts'],
    rules: { 'no-var': 'off' },
  },
  {
    // tests read JSON bodies and events as they come
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
