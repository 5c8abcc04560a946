const attempt = (f) => { try { return f(); } catch (e) { return e.name; } };
return {
  defaults: [
    1234567.891.toLocaleString(), (0).toLocaleString(), (-0).toLocaleString(), (-1234.5).toLocaleString(),
    NaN.toLocaleString(), Infinity.toLocaleString(), (-Infinity).toLocaleString(), (0.0005).toLocaleString(),
    (0.0004).toLocaleString(), (999.9995).toLocaleString(), (1e21).toLocaleString(), (123.456789e-10).toLocaleString(),
    (0.1 + 0.2).toLocaleString(), (12).toLocaleString(), (2 ** 53).toLocaleString(),
  ],
  locales: [(1234.5).toLocaleString('en-US'), (1234.5).toLocaleString('de-DE')],
  fractions: [
    (1.005).toLocaleString(undefined, { maximumFractionDigits: 2 }),
    (5).toLocaleString(undefined, { minimumFractionDigits: 2 }),
    (1234.5678).toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 }),
    (2.5).toLocaleString(undefined, { maximumFractionDigits: 0 }),
    (-2.5).toLocaleString(undefined, { maximumFractionDigits: 0 }),
    (0.123456).toLocaleString(undefined, { maximumFractionDigits: 5 }),
    (1).toLocaleString(undefined, { minimumFractionDigits: 5 }),
    (3).toLocaleString(undefined, { minimumIntegerDigits: 3 }),
    (1234567).toLocaleString(undefined, { useGrouping: false }),
  ],
  styles: [
    (0.256).toLocaleString(undefined, { style: 'percent' }),
    (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'USD' }),
    (-5).toLocaleString('en-US', { style: 'currency', currency: 'EUR' }),
    (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'JPY' }),
    (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'CHF' }),
    (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'usd', currencyDisplay: 'code' }),
  ],
  bigint: [123456789n.toLocaleString(), (-1234n).toLocaleString(), 10n.toLocaleString(undefined, { minimumFractionDigits: 2 })],
  arrays: [1234.5, 6789].toLocaleString(),
  errors: [
    attempt(() => (1).toLocaleString(undefined, { maximumFractionDigits: 101 })),
    attempt(() => (1).toLocaleString(undefined, { minimumFractionDigits: 3, maximumFractionDigits: 2 })),
    attempt(() => (1).toLocaleString(undefined, { style: 'currency' })),
    attempt(() => (1).toLocaleString(undefined, { maximumSignificantDigits: 22 })),
    attempt(() => Number.prototype.toLocaleString.call('1')),
  ],
};
