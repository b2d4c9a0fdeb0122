// ESLint flat config: typescript-eslint strict type-checked over src/, test/ and bench/.
// Layout rules (rooms, one-way core imports, no cycles) live in scripts/check-imports.mjs.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/protocol/gen/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [js.configs.recommended, tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      // Numbers and booleans print fine in messages; nullish values and objects stay flagged.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // noUncheckedIndexedAccess makes `xs[i]!` the idiom for an index known to be in bounds.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `() => f()` shorthand callbacks read clearly; void values in statements stay flagged.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // Rethrowing or rejecting with a caught `unknown` (an error from below, signal.reason) passes it on unchanged.
      '@typescript-eslint/only-throw-error': ['error', { allowThrowingUnknown: true, allowThrowingAny: true }],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true, allowThrowingAny: true }],
      // It misreads flags set by callbacks across awaits (signal.aborted, done) and defensive checks on
      // decoded peer input, whose types state what the decoder is about to verify.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // `+1` spells a signed delta; String() on decoded enums guards values the types trust too much.
      '@typescript-eslint/no-unnecessary-type-conversion': 'off',
      // async methods implement Promise-returning interfaces; `async` keeps a throw a rejection.
      '@typescript-eslint/require-await': 'off',
      // `_name` marks a binding kept on purpose (destructuring a field away, a fixed callback shape).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // tap queues and awaits its own subtests: `t.test(...)` returns a PromiseWithSubtest.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafePromises: [{ from: 'package', package: '@tapjs/core', name: 'PromiseWithSubtest' }] },
      ],
      // Decoder tests feed raw enum numbers on purpose, to hit the range checks.
      '@typescript-eslint/no-unsafe-enum-assignment': 'off',
    },
  },
);
