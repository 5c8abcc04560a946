  // ------------------------------------------------------------- toLocaleString (en-US) --
  // Intl-free: every locale formats as en-US does. The digits are the shortest decimal
  // form of the number, rounded half away from zero, as V8's ICU does.
  const currencySymbols = ObjectCtor.assign(ObjectCtor.create(null), {
    USD: '$', EUR: '€', GBP: '£', JPY: '¥', CNY: 'CN¥', INR: '₹', KRW: '₩', CAD: 'CA$', AUD: 'A$',
    BRL: 'R$', MXN: 'MX$', HKD: 'HK$', NZD: 'NZ$', TWD: 'NT$', ILS: '₪', VND: '₫', PHP: '₱',
  });
  const currencyDigits = ObjectCtor.assign(ObjectCtor.create(null), {
    JPY: 0, KRW: 0, VND: 0, CLP: 0, ISK: 0, UGX: 0, PYG: 0, XAF: 0, XOF: 0,
    BHD: 3, KWD: 3, OMR: 3, JOD: 3, TND: 3, LYD: 3,
  });

  function unsupported(what) {
    return new RangeErrorCtor(`toLocaleString(): ${what} is not supported in Exec scripts (numbers format as en-US, without Intl)`);
  }

  function digitOption(options, name, min, max) {
    const value = options[name];
    if (value === undefined) return undefined;
    const n = +value;
    if (isNaNumber(n) || n < min || n > max) throw new RangeErrorCtor(`${name} value is out of range.`);
    return n - (n % 1);
  }

  function stringOption(options, name, allowed, fallback) {
    const value = options[name];
    if (value === undefined) return fallback;
    const text = `${value}`;
    for (let i = 0; i < allowed.length; i++) if (allowed[i] === text) return text;
    throw new RangeErrorCtor(`Value ${text} out of range for toLocaleString() options property ${name}`);
  }

  // ECMA-402's number format options, those this formatter has.
  function numberFormat(options) {
    if (options === null) throw new TypeErrorCtor('toLocaleString(): the options cannot be null');
    const o = options === undefined ? ObjectCtor.create(null) : ObjectCtor(options);
    const minimumIntegerDigits = digitOption(o, 'minimumIntegerDigits', 1, 21) ?? 1;
    let minimumFraction = digitOption(o, 'minimumFractionDigits', 0, 100);
    let maximumFraction = digitOption(o, 'maximumFractionDigits', 0, 100);
    if (o.minimumSignificantDigits !== undefined || o.maximumSignificantDigits !== undefined) {
      throw unsupported('significant-digit rounding');
    }
    const notation = stringOption(o, 'notation', ['standard', 'scientific', 'engineering', 'compact'], 'standard');
    if (notation !== 'standard') throw unsupported(`notation "${notation}"`);
    const style = stringOption(o, 'style', ['decimal', 'percent', 'currency', 'unit'], 'decimal');
    if (style === 'unit') throw unsupported('style "unit"');
    let prefix = '';
    let suffix = style === 'percent' ? '%' : '';
    let defaultMin = 0;
    let defaultMax = style === 'percent' ? 0 : 3;
    if (style === 'currency') {
      const currency = o.currency;
      if (currency === undefined) throw new TypeErrorCtor('Currency code is required with currency style.');
      const code = stringToUpperCase(`${currency}`);
      if (!regExpTest(/^[A-Z]{3}$/, code)) throw new RangeErrorCtor(`Invalid currency code : ${currency}`);
      const display = stringOption(o, 'currencyDisplay', ['symbol', 'narrowSymbol', 'code', 'name'], 'symbol');
      if (display === 'name') throw unsupported('currencyDisplay "name"');
      prefix = display !== 'code' && currencySymbols[code] !== undefined ? currencySymbols[code] : `${code}\u00a0`;
      defaultMin = defaultMax = currencyDigits[code] ?? 2;
    }
    if (minimumFraction === undefined && maximumFraction === undefined) {
      minimumFraction = defaultMin;
      maximumFraction = defaultMax;
    } else if (minimumFraction === undefined) {
      minimumFraction = defaultMin < maximumFraction ? defaultMin : maximumFraction;
    } else if (maximumFraction === undefined) {
      maximumFraction = defaultMax > minimumFraction ? defaultMax : minimumFraction;
    } else if (minimumFraction > maximumFraction) {
      throw new RangeErrorCtor('maximumFractionDigits value is out of range.');
    }
    const grouping = o.useGrouping !== false && o.useGrouping !== 'false';
    return { minimumIntegerDigits, minimumFraction, maximumFraction, grouping, prefix, suffix, percent: style === 'percent' };
  }

  // `digits` with the point after `point` of them, in the format `f`.
  function formatDigits(negative, digits, point, f) {
    const body = host.formatDecimal(digits, f.percent ? point + 2 : point, f.minimumIntegerDigits,
      f.minimumFraction, f.maximumFraction, f.grouping);
    return `${negative ? '-' : ''}${f.prefix}${body}${f.suffix}`;
  }

  const localeFormats = {
    toLocaleString(locales = undefined, options = undefined) {
      const x = numberValueOf(this);
      const f = numberFormat(options);
      if (isNaNumber(x)) return `${f.prefix}NaN${f.suffix}`;
      const negative = x < 0 || (x === 0 && 1 / x < 0);
      if (x === Infinity || x === -Infinity) return `${negative ? '-' : ''}${f.prefix}∞${f.suffix}`;
      // Read by index: a script may have patched the array iterator.
      const shortest = host.numberDigits(x);
      return formatDigits(negative, shortest[0], shortest[1], f);
    },
  };
  const bigintFormats = {
    toLocaleString(locales = undefined, options = undefined) {
      const x = bigintValueOf(this);
      const f = numberFormat(options);
      const negative = x < 0n;
      const digits = `${negative ? -x : x}`;
      return formatDigits(negative, digits, digits.length, f);
    },
  };
  defineProperty(Number.prototype, 'toLocaleString', { value: localeFormats.toLocaleString, writable: true, enumerable: false, configurable: true });
  defineProperty(BigInt.prototype, 'toLocaleString', { value: bigintFormats.toLocaleString, writable: true, enumerable: false, configurable: true });
})
