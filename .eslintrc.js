const loopback = require('@loopback/eslint-config');

// The wire format (spec fields, log records, SQL rows) is snake_case, so
// properties may use it; everything else keeps LoopBack's conventions.
const [severity, ...namingOptions] =
  loopback.rules['@typescript-eslint/naming-convention'];
const naming = namingOptions.map(option =>
  option.selector === 'property' && !option.modifiers
    ? {...option, format: [...option.format, 'snake_case']}
    : option,
);

module.exports = {
  extends: '@loopback/eslint-config',
  overrides: [
    {
      // Plain Node scripts (benchmarks) sit outside the TypeScript project.
      files: ['scripts/**/*.js'],
      extends: ['plugin:@typescript-eslint/disable-type-checked'],
      parserOptions: {project: null},
      rules: {'@typescript-eslint/no-var-requires': 'off'},
    },
  ],
  parserOptions: {
    // The service, and the generated client's integration test and benchmark.
    project: [
      './tsconfig.json',
      './tsconfig.client.json',
      './console/tsconfig.json',
    ],
  },
  rules: {
    'no-console': 'error',
    '@typescript-eslint/naming-convention': [
      severity,
      ...naming,
      // Names that need quotes are foreign (OpenAPI extensions, headers).
      {selector: 'property', modifiers: ['requiresQuotes'], format: null},
    ],
  },
};
