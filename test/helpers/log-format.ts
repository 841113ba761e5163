/**
 * In-process services of the tests keep their log lines in their log store only (the tests that
 * read logs query the store), so the test output stays readable. `MILLWRIGHT_TEST_LOG_FORMAT=json`
 * (or `pretty`) prints them while debugging a test.
 */
export const TEST_LOG_FORMAT = (process.env.MILLWRIGHT_TEST_LOG_FORMAT ?? 'none') as
  'auto' | 'pretty' | 'json' | 'none';
