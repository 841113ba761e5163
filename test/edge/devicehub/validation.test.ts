/** The property validator: each kind of value, accepted (normalised) or refused with the allowed values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prop, column, PARITY_FOURTEEN } from '../../../src/edge/devicehub/catalogue/index.js';
import { checkValue, resolveProperties } from '../../../src/edge/devicehub/validation.js';
import { AppError } from '../../../src/kernel/errors.js';

test('checkValue: each property kind', () => {
  const cases: Array<[ReturnType<typeof prop.string>, string, string | RegExp]> = [
    [prop.uint('port', '', { min: 1, max: 65535 }), '502', '502'],
    [prop.uint('port', '', { min: 1, max: 65535 }), '+0502', '502'],
    [prop.uint('port', '', { min: 1, max: 65535 }), '0', /integers from 1 to 65535/],
    [prop.uint('port', '', { min: 1, max: 65535 }), '-1', /integers from 1 to 65535/],
    [prop.uint('port', '', { min: 1, max: 65535 }), '1e3', /"1e3"/],
    [prop.int('offset', '', { min: -10, max: 10 }), '-10', '-10'],
    [prop.int('offset', '', { min: -10, max: 10 }), '11', /from -10 to 10/],
    [prop.float('gain', ''), ' 2.50 ', '2.5'],
    [prop.float('gain', ''), 'NaN', /any number/],
    [prop.bool('tls', ''), 'TRUE', 'true'],
    [prop.bool('tls', ''), '0', 'false'],
    [prop.bool('tls', ''), 'yes', /allowed values: true, false/],
    [prop.select('UnsignedInteger', 'parity', '', PARITY_FOURTEEN), '2', '2'],
    [prop.select('UnsignedInteger', 'parity', '', PARITY_FOURTEEN), '3', /0 \(None\), 1 \(Odd\), 2 \(Even\)/],
    [prop.select('String', 'mode', '', [['a', 'A']]), 'b', /allowed values: a \(A\)/],
    [
      prop.table('map', '', [
        column('From', 'UnsignedInteger'),
        column('To', 'String', { allowEmpty: true }),
      ]),
      '[{"From":1}]',
      '[{"From":1}]',
    ],
    [prop.table('map', '', [column('From', 'UnsignedInteger')]), '[{"From":"x"}]', /row 1 column "From"/],
    [prop.table('map', '', [column('From', 'UnsignedInteger')]), '{}', /not an array/],
    [prop.table('map', '', [column('From', 'UnsignedInteger')]), '[{"Nope":1}]', /unknown column "Nope"/],
    [prop.table('map', '', [column('From', 'UnsignedInteger')]), '[{}]', /may not be empty/],
  ];
  for (const [def, raw, expected] of cases) {
    const r = checkValue(def, raw);
    if (typeof expected === 'string') assert.deepEqual(r, { value: expected }, `${def.name} ${raw}`);
    else {
      assert.ok('reason' in r, `${def.name} ${raw} should be refused`);
      assert.match(r.reason, new RegExp(`property "${def.name}"`));
      assert.match(r.reason, expected);
    }
  }
});

test('resolveProperties: defaults, merge over stored values, unknown and missing properties', () => {
  const defs = [
    prop.string('host', '', { required: true }),
    prop.uint('port', '', { default: 502, min: 1, max: 65535 }),
  ];
  assert.deepEqual(resolveProperties('device "d"', 'driver "x"', defs, [{ name: 'host', value: 'h' }]), {
    host: 'h',
    port: '502',
  });
  assert.deepEqual(
    resolveProperties('device "d"', 'driver "x"', defs, [{ name: 'port', value: '1' }], {
      host: 'h',
      port: '9',
    }),
    { host: 'h', port: '1' },
  );
  const refuse = (fn: () => unknown, re: RegExp) =>
    assert.throws(fn, (e: unknown) => e instanceof AppError && e.status === 400 && re.test(e.message));
  refuse(
    () => resolveProperties('device "d"', 'driver "x"', defs, []),
    /^device "d": property "host" is required/,
  );
  refuse(
    () => resolveProperties('device "d"', 'driver "x"', defs, [{ name: 'h0st', value: 'h' }]),
    /^device "d": driver "x" has no property "h0st"; properties: host, port/,
  );
  refuse(
    () =>
      resolveProperties('device "d"', 'driver "x"', defs, [
        { name: 'host', value: 'a' },
        { name: 'host', value: 'b' },
      ]),
    /given more than once/,
  );
});
