// ECMA-402's `Intl`, and the locale-taking methods of Number, BigInt, Date, String and
// Array routed through it. This half reads and checks options in the standard's order,
// resolves locales, and builds every object a script sees; the native half (`intl`, see
// mod.rs) holds ICU4X's formatters, by index. It runs once in the script's realm, after
// the web globals; every function it installs belongs to that realm, and it captures the
// built-ins it uses first, so a script that patches them changes only its own behaviour.
(function (intl) {
  'use strict';

  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const getPrototypeOf = Object.getPrototypeOf;
  const objectCreate = Object.create;
  const ObjectCtor = Object;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const MapCtor = Map;
  const WeakMapCtor = WeakMap;
  const SymbolCtor = Symbol;
  const BigIntCtor = BigInt;
  const mathFloor = Math.floor;
  const isNaNumber = Number.isNaN;
  const isFiniteNumber = Number.isFinite;
  const iteratorSymbol = Symbol.iterator;
  const toStringTagSymbol = Symbol.toStringTag;
  const uncurry = (f) => (self, ...args) => apply(f, self, args);
  const weakMapGet = uncurry(WeakMap.prototype.get);
  const weakMapSet = uncurry(WeakMap.prototype.set);
  const mapGet = uncurry(Map.prototype.get);
  const mapSet = uncurry(Map.prototype.set);
  // Appends by defining, as the standard's lists do: a setter a script put on
  // Array.prototype never runs.
  const arrayPush = (array, value) => {
    defineProperty(array, array.length, { value, writable: true, enumerable: true, configurable: true });
  };
  const arrayJoin = uncurry(Array.prototype.join);
  const arrayIndexOf = uncurry(Array.prototype.indexOf);
  const arraySort = uncurry(Array.prototype.sort);
  const arraySlice = uncurry(Array.prototype.slice);
  const stringSlice = uncurry(String.prototype.slice);
  const stringCharCodeAt = uncurry(String.prototype.charCodeAt);
  const stringSplit = uncurry(String.prototype.split);
  const stringIndexOf = uncurry(String.prototype.indexOf);
  const stringToLowerCase = uncurry(String.prototype.toLowerCase);
  const stringToUpperCase = uncurry(String.prototype.toUpperCase);
  const stringTrim = uncurry(String.prototype.trim);
  const toWellFormed = uncurry(String.prototype.toWellFormed);
  const regExpTest = uncurry(RegExp.prototype.test);
  const numberValueOf = uncurry(Number.prototype.valueOf);
  const bigintValueOf = uncurry(BigInt.prototype.valueOf);
  const dateGetTime = uncurry(Date.prototype.getTime);
  const DateNow = Date.now;

  // ------------------------------------------------------------------ internal slots --
  // Each Intl object's state, by object: a script cannot reach or forge it.
  const slots = new WeakMapCtor();

  function slotOf(object, kind, method) {
    const slot = (typeof object === 'object' && object !== null) || typeof object === 'function' ? weakMapGet(slots, object) : undefined;
    if (slot === undefined || slot.kind !== kind) {
      throw new TypeErrorCtor(`Method Intl.${kind}.prototype.${method} called on incompatible receiver (${object === null ? 'null' : typeof object})`);
    }
    return slot;
  }

  // Equal options make one native formatter, kept for the run (the native table is bounded).
  const nativeCache = new MapCtor();
  function cached(key, make) {
    let handle = mapGet(nativeCache, key);
    if (handle === undefined) {
      handle = make();
      mapSet(nativeCache, key, handle);
    }
    return handle;
  }

  // ------------------------------------------------------------------------- options --
  function toObject(value) {
    if (value === undefined || value === null) throw new TypeErrorCtor('Cannot convert undefined or null to object');
    return ObjectCtor(value);
  }

  // CoerceOptionsToObject: the older constructors' options.
  function coerceOptions(options) {
    return options === undefined ? objectCreate(null) : toObject(options);
  }

  // GetOptionsObject: the newer constructors refuse anything but an object.
  function optionsObject(options) {
    if (options === undefined) return objectCreate(null);
    if ((typeof options === 'object' && options !== null) || typeof options === 'function') return options;
    throw new TypeErrorCtor('Options must be an object');
  }

  function getOption(options, property, type, values, fallback) {
    let value = options[property];
    if (value === undefined) return fallback;
    if (type === 'boolean') value = !!value;
    else value = `${value}`;
    if (values !== undefined && arrayIndexOf(values, value) < 0) {
      throw new RangeErrorCtor(`Value ${value} out of range for Intl options property ${property}`);
    }
    return value;
  }

  function defaultNumberOption(value, minimum, maximum, fallback, property) {
    if (value === undefined) return fallback;
    const n = +value;
    if (isNaNumber(n) || n < minimum || n > maximum) throw new RangeErrorCtor(`${property} value is out of range.`);
    return mathFloor(n);
  }

  function getNumberOption(options, property, minimum, maximum, fallback) {
    return defaultNumberOption(options[property], minimum, maximum, fallback, property);
  }

  // A Unicode extension type: `(3*8alphanum) *("-" (3*8alphanum))`.
  const typeSequence = /^[0-9A-Za-z]{3,8}(-[0-9A-Za-z]{3,8})*$/;

  // ------------------------------------------------------------------------- locales --
  const DEFAULT_LOCALE = 'en-US';
  const shipped = intl.shippedLanguages;
  const localeSlot = (value) => ((typeof value === 'object' && value !== null) ? weakMapGet(slots, value) : undefined);

  function canonicalizeLocaleList(locales) {
    const seen = [];
    if (locales === undefined) return seen;
    const slot = localeSlot(locales);
    const list = typeof locales === 'string' || (slot !== undefined && slot.kind === 'Locale') ? [locales] : toObject(locales);
    const length = toLength(list.length);
    for (let k = 0; k < length; k++) {
      if (!(k in list)) continue;
      const value = list[k];
      if (typeof value !== 'string' && (typeof value !== 'object' || value === null)) {
        throw new TypeErrorCtor('Language ID should be string or object.');
      }
      const valueSlot = localeSlot(value);
      const tag = valueSlot !== undefined && valueSlot.kind === 'Locale' ? valueSlot.tag : `${value}`;
      const canonical = intl.canonicalizeLocale(tag);
      if (arrayIndexOf(seen, canonical) < 0) arrayPush(seen, canonical);
    }
    return seen;
  }

  function toLength(value) {
    const n = +value;
    if (!(n > 0)) return 0;
    return n >= 2 ** 53 - 1 ? 2 ** 53 - 1 : mathFloor(n);
  }

  // The tag with its Unicode extension (`-u-...`) removed, and that extension's keywords.
  function splitExtension(tag) {
    const subtags = stringSplit(tag, '-');
    const base = [];
    const keywords = objectCreate(null);
    let i = 0;
    for (; i < subtags.length; i++) {
      const s = subtags[i];
      if (s.length === 1) break;
      arrayPush(base, s);
    }
    const rest = [];
    while (i < subtags.length) {
      const singleton = subtags[i];
      if (singleton === 'x') {
        for (; i < subtags.length; i++) arrayPush(rest, subtags[i]);
        break;
      }
      let j = i + 1;
      while (j < subtags.length && subtags[j].length > 1) j++;
      if (singleton === 'u') {
        let key;
        for (let k = i + 1; k < j; k++) {
          const s = subtags[k];
          if (s.length === 2) {
            key = s;
            keywords[key] = '';
          } else if (key !== undefined) {
            keywords[key] = keywords[key] === '' ? s : `${keywords[key]}-${s}`;
          }
        }
      } else {
        for (let k = i; k < j; k++) arrayPush(rest, subtags[k]);
      }
      i = j;
    }
    return { base: arrayJoin(base, '-'), other: arrayJoin(rest, '-'), keywords };
  }

  // Whether the artefact has data for `tag` (no extensions): its language is shipped.
  function isAvailable(tag) {
    const language = stringSplit(tag, '-')[0];
    return arrayIndexOf(shipped, language) >= 0;
  }

  // LookupMatcher: the first requested locale with data, or the default.
  function lookup(requested) {
    for (let i = 0; i < requested.length; i++) {
      const { base, keywords } = splitExtension(requested[i]);
      if (isAvailable(base)) return { locale: base, keywords };
    }
    return { locale: DEFAULT_LOCALE, keywords: objectCreate(null) };
  }

  // ResolveLocale, for the keys in `relevant`: each from the option when given, else
  // from the locale's extension; `supported(key, value)` says whether a value is known.
  // The resolved tag keeps the extension keywords that were used, as V8's does.
  function resolveLocale(requested, optionValues, relevant, supported) {
    const found = lookup(requested);
    const result = { __proto__: null, locale: found.locale };
    const kept = [];
    for (let i = 0; i < relevant.length; i++) {
      const key = relevant[i];
      let value;
      let fromExtension = false;
      const extensionValue = found.keywords[key];
      if (extensionValue !== undefined) {
        const v = extensionValue === '' ? 'true' : extensionValue;
        if (supported(key, v)) {
          value = v;
          fromExtension = true;
        }
      }
      const optionValue = optionValues[key];
      if (optionValue !== undefined && supported(key, optionValue)) {
        if (optionValue !== value) fromExtension = false;
        value = optionValue;
      }
      result[key] = value;
      if (fromExtension) arrayPush(kept, value === 'true' ? key : `${key}-${value}`);
    }
    if (kept.length > 0) result.locale = `${found.locale}-u-${arrayJoin(arraySort(kept), '-')}`;
    result.dataLocale = found.locale;
    return result;
  }

  function supportedLocalesOf(locales, options) {
    const requested = canonicalizeLocaleList(locales);
    if (options !== undefined) getOption(toObject(options), 'localeMatcher', 'string', ['lookup', 'best fit'], 'best fit');
    const out = [];
    for (let i = 0; i < requested.length; i++) {
      if (isAvailable(splitExtension(requested[i]).base)) arrayPush(out, requested[i]);
    }
    return out;
  }

  function matcherOption(options) {
    return getOption(options, 'localeMatcher', 'string', ['lookup', 'best fit'], 'best fit');
  }

  // ---------------------------------------------------------------- class machinery --
  // Defines `Intl[name]`: a constructor with `supportedLocalesOf`, its prototype's
  // methods, getters and tag; `callable` constructors (the three ES5-era ones) work
  // without `new`.
  const Intl = objectCreate(ObjectCtor.prototype);

  function defineClass(name, construct, { callable = false, length = 0, methods = {}, getters = {}, statics = {} } = {}) {
    const holder = {
      [name]: function (locales = undefined, options = undefined) {
        if (new.target === undefined && !callable) throw new TypeErrorCtor(`Constructor Intl.${name} requires 'new'`);
        const target = new.target === undefined ? ctor : new.target;
        let proto = target.prototype;
        if ((typeof proto !== 'object' || proto === null) && typeof proto !== 'function') proto = ctor.prototype;
        const object = objectCreate(proto);
        const slot = construct(locales, options);
        slot.kind = name;
        weakMapSet(slots, object, slot);
        return object;
      },
    };
    const ctor = holder[name];
    const proto = ctor.prototype;
    defineProperty(ctor, 'prototype', { writable: false });
    defineProperty(ctor, 'length', { value: length, configurable: true });
    for (const key of ObjectCtor.keys(methods)) {
      defineProperty(proto, key, { value: methods[key], writable: true, enumerable: false, configurable: true });
    }
    for (const key of ObjectCtor.keys(getters)) {
      defineProperty(getters[key], 'name', { value: `get ${key}`, configurable: true });
      defineProperty(proto, key, { get: getters[key], enumerable: false, configurable: true });
    }
    defineProperty(proto, toStringTagSymbol, { value: `Intl.${name}`, writable: false, enumerable: false, configurable: true });
    const allStatics = { supportedLocalesOf: { supportedLocalesOf(locales, options = undefined) { return supportedLocalesOf(locales, options); } }.supportedLocalesOf, ...statics };
    for (const key of ObjectCtor.keys(allStatics)) {
      defineProperty(ctor, key, { value: allStatics[key], writable: true, enumerable: false, configurable: true });
    }
    defineProperty(Intl, name, { value: ctor, writable: true, enumerable: false, configurable: true });
    return ctor;
  }

  // A method or getter function with the given name, not a constructor.
  function bound(slot, key, make) {
    if (slot[key] === undefined) slot[key] = make();
    return slot[key];
  }

  // CreateDataProperty: defined, so a setter on Object.prototype never runs.
  function dataProperty(object, key, value) {
    defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  }

  function partsArray(flat, extra) {
    const out = [];
    for (let i = 0; i < flat.length; i += 2) {
      const part = { type: flat[i], value: flat[i + 1] };
      if (extra !== undefined) extra(part);
      arrayPush(out, part);
    }
    return out;
  }

  function joinParts(flat) {
    let text = '';
    for (let i = 1; i < flat.length; i += 2) text += flat[i];
    return text;
  }

  // ------------------------------------------------------------------- NumberFormat --
  // ISO 4217 minor units that are not 2 (the standard's CurrencyDigits).
  const currencyDigits = objectCreate(null);
  for (const code of ['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF']) currencyDigits[code] = 0;
  for (const code of ['BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND']) currencyDigits[code] = 3;
  currencyDigits.CLF = 4;
  currencyDigits.UYW = 4;

  // The ISO 4217 codes in use, for supportedValuesOf.
  const currencyCodes = 'AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XCG XDR XOF XPF XSU YER ZAR ZMW ZWG ZWL';

  // The simple units ECMA-402 sanctions; `a-per-b` combines two of them.
  const sanctionedUnits = ['acre', 'bit', 'byte', 'celsius', 'centimeter', 'day', 'degree', 'fahrenheit', 'fluid-ounce',
    'foot', 'gallon', 'gigabit', 'gigabyte', 'gram', 'hectare', 'hour', 'inch', 'kilobit', 'kilobyte', 'kilogram',
    'kilometer', 'liter', 'megabit', 'megabyte', 'meter', 'microsecond', 'mile', 'mile-scandinavian', 'milliliter',
    'millimeter', 'millisecond', 'minute', 'month', 'nanosecond', 'ounce', 'percent', 'petabyte', 'pound', 'second',
    'stone', 'terabit', 'terabyte', 'week', 'yard', 'year'];

  function isWellFormedUnit(unit) {
    if (arrayIndexOf(sanctionedUnits, unit) >= 0) return true;
    const per = stringIndexOf(unit, '-per-');
    if (per < 0) return false;
    return arrayIndexOf(sanctionedUnits, stringSlice(unit, 0, per)) >= 0 && arrayIndexOf(sanctionedUnits, stringSlice(unit, per + 5)) >= 0;
  }

  const numberingSystems = ['adlm', 'ahom', 'arab', 'arabext', 'bali', 'beng', 'bhks', 'brah', 'cakm', 'cham', 'deva',
    'diak', 'fullwide', 'gara', 'gong', 'gonm', 'gujr', 'gukh', 'guru', 'hanidec', 'hmng', 'hmnp', 'java', 'kali', 'kawi',
    'khmr', 'knda', 'krai', 'lana', 'lanatham', 'laoo', 'latn', 'lepc', 'limb', 'mathbold', 'mathdbl', 'mathmono',
    'mathsanb', 'mathsans', 'mlym', 'modi', 'mong', 'mroo', 'mtei', 'mymr', 'mymrepka', 'mymrpao', 'mymrshan',
    'mymrtlng', 'nagm', 'newa', 'nkoo', 'olck', 'onao', 'orya', 'osma', 'outlined', 'rohg', 'saur', 'segment', 'shrd',
    'sind', 'sinh', 'sora', 'sund', 'sunu', 'takr', 'talu', 'tamldec', 'telu', 'thai', 'tibt', 'tirh', 'tnsa', 'vaii',
    'wara', 'wcho'];

  const numberFormatOptionOrder = ['locale', 'numberingSystem', 'style', 'currency', 'currencyDisplay', 'currencySign',
    'unit', 'unitDisplay', 'minimumIntegerDigits', 'minimumFractionDigits', 'maximumFractionDigits',
    'minimumSignificantDigits', 'maximumSignificantDigits', 'useGrouping', 'notation', 'compactDisplay', 'signDisplay',
    'roundingIncrement', 'roundingMode', 'roundingPriority', 'trailingZeroDisplay'];

  // SetNumberFormatDigitOptions, into `r`.
  function digitOptions(r, options, minimumFractionDefault, maximumFractionDefault, notation) {
    r.minimumIntegerDigits = getNumberOption(options, 'minimumIntegerDigits', 1, 21, 1);
    const mnfd = options.minimumFractionDigits;
    const mxfd = options.maximumFractionDigits;
    const mnsd = options.minimumSignificantDigits;
    const mxsd = options.maximumSignificantDigits;
    const increment = getNumberOption(options, 'roundingIncrement', 1, 5000, 1);
    if (arrayIndexOf([1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000], increment) < 0) {
      throw new RangeErrorCtor('roundingIncrement value is out of range.');
    }
    const roundingMode = getOption(options, 'roundingMode', 'string',
      ['ceil', 'floor', 'expand', 'trunc', 'halfCeil', 'halfFloor', 'halfExpand', 'halfTrunc', 'halfEven'], 'halfExpand');
    const priority = getOption(options, 'roundingPriority', 'string', ['auto', 'morePrecision', 'lessPrecision'], 'auto');
    const trailingZeroDisplay = getOption(options, 'trailingZeroDisplay', 'string', ['auto', 'stripIfInteger'], 'auto');
    if (increment !== 1) maximumFractionDefault = minimumFractionDefault;
    r.roundingIncrement = increment;
    r.roundingMode = roundingMode;
    r.trailingZeroDisplay = trailingZeroDisplay;
    const hasSd = mnsd !== undefined || mxsd !== undefined;
    const hasFd = mnfd !== undefined || mxfd !== undefined;
    let needSd = true;
    let needFd = true;
    if (priority === 'auto') {
      needSd = hasSd;
      if (needSd || (!hasFd && notation === 'compact')) needFd = false;
    }
    if (needSd) {
      if (hasSd) {
        r.minimumSignificantDigits = defaultNumberOption(mnsd, 1, 21, 1, 'minimumSignificantDigits');
        r.maximumSignificantDigits = defaultNumberOption(mxsd, r.minimumSignificantDigits, 21, 21, 'maximumSignificantDigits');
      } else {
        r.minimumSignificantDigits = 1;
        r.maximumSignificantDigits = 21;
      }
    }
    if (needFd) {
      if (hasFd) {
        let min = defaultNumberOption(mnfd, 0, 100, undefined, 'minimumFractionDigits');
        let max = defaultNumberOption(mxfd, 0, 100, undefined, 'maximumFractionDigits');
        if (min === undefined) min = minimumFractionDefault < max ? minimumFractionDefault : max;
        else if (max === undefined) max = maximumFractionDefault > min ? maximumFractionDefault : min;
        else if (min > max) throw new RangeErrorCtor('maximumFractionDigits value is out of range.');
        r.minimumFractionDigits = min;
        r.maximumFractionDigits = max;
      } else {
        r.minimumFractionDigits = minimumFractionDefault;
        r.maximumFractionDigits = maximumFractionDefault;
      }
    }
    if (!needSd && !needFd) {
      r.minimumFractionDigits = 0;
      r.maximumFractionDigits = 0;
      r.minimumSignificantDigits = 1;
      r.maximumSignificantDigits = 2;
      r.roundingType = 'morePrecision';
      r.roundingPriority = 'morePrecision';
    } else if (priority === 'auto') {
      r.roundingType = hasSd ? 'significantDigits' : 'fractionDigits';
      r.roundingPriority = 'auto';
    } else {
      r.roundingType = priority;
      r.roundingPriority = priority;
    }
    if (increment !== 1) {
      if (r.roundingType !== 'fractionDigits') throw new TypeErrorCtor('roundingIncrement requires fraction-digit rounding');
      if (r.maximumFractionDigits !== r.minimumFractionDigits) {
        throw new RangeErrorCtor('roundingIncrement requires equal minimum and maximum fraction digits');
      }
    }
  }

  function numberingSystemOption(options) {
    const value = getOption(options, 'numberingSystem', 'string', undefined, undefined);
    if (value !== undefined && !regExpTest(typeSequence, value)) throw new RangeErrorCtor(`Invalid numberingSystem : ${value}`);
    return value;
  }

  const supportsNumbering = (key, value) => key === 'nu' && arrayIndexOf(numberingSystems, value) >= 0;

  function resolvedNumbering(r) {
    if (r.nu !== undefined) return r.nu;
    return intl.defaultNumberingSystem(r.dataLocale);
  }

  // The native formatter's locale: the data locale with the numbering system chosen.
  function dataTag(r, extra) {
    let tag = r.dataLocale;
    const keys = [];
    if (r.nu !== undefined) arrayPush(keys, `nu-${r.nu}`);
    if (extra !== undefined) for (let i = 0; i < extra.length; i++) arrayPush(keys, extra[i]);
    if (keys.length > 0) tag = `${tag}-u-${arrayJoin(keys, '-')}`;
    return tag;
  }

  function createNumberFormat(locales, options) {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    matcherOption(options);
    const numberingSystem = numberingSystemOption(options);
    const r = resolveLocale(requested, { nu: numberingSystem }, ['nu'], supportsNumbering);
    const slot = { __proto__: null, locale: r.locale, numberingSystem: resolvedNumbering(r) };
    // SetNumberFormatUnitOptions.
    const style = getOption(options, 'style', 'string', ['decimal', 'percent', 'currency', 'unit'], 'decimal');
    slot.style = style;
    let currency = getOption(options, 'currency', 'string', undefined, undefined);
    if (currency === undefined) {
      if (style === 'currency') throw new TypeErrorCtor('Currency code is required with currency style.');
    } else if (!regExpTest(/^[A-Za-z]{3}$/, currency)) {
      throw new RangeErrorCtor(`Invalid currency code : ${currency}`);
    }
    const currencyDisplay = getOption(options, 'currencyDisplay', 'string', ['code', 'symbol', 'narrowSymbol', 'name'], 'symbol');
    const currencySign = getOption(options, 'currencySign', 'string', ['standard', 'accounting'], 'standard');
    const unit = getOption(options, 'unit', 'string', undefined, undefined);
    if (unit === undefined) {
      if (style === 'unit') throw new TypeErrorCtor('Unit is required with unit style.');
    } else if (!isWellFormedUnit(unit)) {
      throw new RangeErrorCtor(`Invalid unit argument for Intl.NumberFormat() '${unit}'`);
    }
    const unitDisplay = getOption(options, 'unitDisplay', 'string', ['short', 'narrow', 'long'], 'short');
    if (style === 'currency') {
      currency = stringToUpperCase(currency);
      // Currency names need ICU4X's extended currency data, which the artefact leaves out.
      if (currencyDisplay === 'name') throw new RangeErrorCtor('Intl.NumberFormat: currencyDisplay "name" is not available in Exec scripts');
      slot.currency = currency;
      slot.currencyDisplay = currencyDisplay;
      slot.currencySign = currencySign;
    }
    if (style === 'unit') {
      slot.unit = unit;
      slot.unitDisplay = unitDisplay;
    }
    const notation = getOption(options, 'notation', 'string', ['standard', 'scientific', 'engineering', 'compact'], 'standard');
    slot.notation = notation;
    let minimumFractionDefault = 0;
    let maximumFractionDefault = style === 'percent' ? 0 : 3;
    if (style === 'currency' && notation === 'standard') {
      const digits = currencyDigits[currency];
      minimumFractionDefault = maximumFractionDefault = digits === undefined ? 2 : digits;
    }
    digitOptions(slot, options, minimumFractionDefault, maximumFractionDefault, notation);
    const compactDisplay = getOption(options, 'compactDisplay', 'string', ['short', 'long'], 'short');
    if (notation === 'compact') slot.compactDisplay = compactDisplay;
    const defaultGrouping = notation === 'compact' ? 'min2' : 'auto';
    slot.useGrouping = groupingOption(options, defaultGrouping);
    slot.signDisplay = getOption(options, 'signDisplay', 'string', ['auto', 'never', 'always', 'exceptZero', 'negative'], 'auto');
    slot.dataTag = dataTag(r);
    slot.handle = numberHandle(r, slot);
    return slot;
  }

  // GetBooleanOrStringNumberFormatOption for useGrouping.
  function groupingOption(options, fallback) {
    const value = options.useGrouping;
    if (value === undefined) return fallback;
    if (value === true) return 'always';
    if (!value) return false;
    const text = `${value}`;
    if (text === 'true' || text === 'false') return fallback;
    if (text !== 'min2' && text !== 'auto' && text !== 'always') {
      throw new RangeErrorCtor(`Value ${text} out of range for Intl.NumberFormat options property useGrouping`);
    }
    return text;
  }

  function numberHandle(r, slot) {
    const spec = {
      style: slot.style,
      currency: slot.currency,
      currencyDisplay: slot.currencyDisplay,
      currencySign: slot.currencySign,
      unit: slot.unit,
      unitDisplay: slot.unitDisplay,
      notation: slot.notation,
      compactDisplay: slot.compactDisplay,
      signDisplay: slot.signDisplay,
      useGrouping: slot.useGrouping === false ? undefined : slot.useGrouping,
      minimumIntegerDigits: slot.minimumIntegerDigits,
      minimumFractionDigits: slot.minimumFractionDigits,
      maximumFractionDigits: slot.maximumFractionDigits,
      minimumSignificantDigits: slot.minimumSignificantDigits,
      maximumSignificantDigits: slot.maximumSignificantDigits,
      roundingType: slot.roundingType,
      roundingMode: slot.roundingMode,
      roundingIncrement: slot.roundingIncrement,
      trailingZeroDisplay: slot.trailingZeroDisplay,
    };
    const tag = dataTag(r);
    let key = `n|${tag}`;
    for (const name of ObjectCtor.keys(spec)) key += `|${spec[name]}`;
    return cached(key, () => intl.numberFormatNew(tag, spec));
  }

  // ToIntlMathematicalValue: a number, or the exact decimal text of a BigInt or string.
  const decimalLiteral = /^[+-]?(?:\d+\.?\d*|\.\d+)$/;
  function mathematicalValue(value) {
    if (typeof value === 'object' && value !== null) value = toPrimitiveNumber(value);
    if (typeof value === 'bigint') return `${value}`;
    if (typeof value === 'string') {
      const text = stringTrim(value);
      if (regExpTest(decimalLiteral, text) && isFiniteNumber(+text)) return text[0] === '+' ? stringSlice(text, 1) : text;
      return +value;
    }
    return +value;
  }

  function toPrimitiveNumber(value) {
    const primitive = value[SymbolCtor.toPrimitive];
    if (primitive !== undefined && primitive !== null) {
      const result = apply(primitive, value, ['number']);
      if (typeof result !== 'object' || result === null) return result;
      throw new TypeErrorCtor('Cannot convert object to primitive value');
    }
    for (const name of ['valueOf', 'toString']) {
      const method = value[name];
      if (typeof method === 'function') {
        const result = apply(method, value, []);
        if (typeof result !== 'object' || result === null) return result;
      }
    }
    throw new TypeErrorCtor('Cannot convert object to primitive value');
  }

  function formatNumberParts(slot, value) {
    return intl.numberFormat(slot.handle, mathematicalValue(value));
  }

  // The part types of a formatted number itself; what is around them (sign, currency,
  // percent sign, unit, compact suffix) is its affix.
  const numberCoreTypes = ['integer', 'group', 'decimal', 'fraction', 'nan', 'infinity', 'exponentSeparator', 'exponentMinusSign', 'exponentInteger'];

  function codePoints(text) {
    let count = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = stringCharCodeAt(text, i);
      if (unit < 0xdc00 || unit > 0xdfff) count++;
    }
    return count;
  }

  // Where the number in flat parts begins and ends (part indices, end exclusive).
  function numberCore(flat) {
    let first = -1;
    let last = -1;
    for (let i = 0; i < flat.length; i += 2) {
      if (arrayIndexOf(numberCoreTypes, flat[i]) >= 0) {
        if (first < 0) first = i;
        last = i + 2;
      }
    }
    return first < 0 ? [0, flat.length] : [first, last];
  }

  // PartitionNumberRangePattern. Equal texts are one approximate number ("~$3"). Otherwise
  // an affix both share is written once, as ICU does, when it is more than one character or
  // a unit ("+$2.90–3.10", "3–5 km", but "$3 – $5"); when an affix is repeated the range
  // separator gets spaces if it has none.
  function numberRangeParts(slot, start, end) {
    if (start === undefined || end === undefined) throw new TypeErrorCtor('formatRange: the start and end are required');
    const x = mathematicalValue(start);
    const y = mathematicalValue(end);
    if ((typeof x === 'number' && isNaNumber(x)) || (typeof y === 'number' && isNaNumber(y))) {
      throw new RangeErrorCtor('formatRange: the start and end must not be NaN');
    }
    const xParts = intl.numberFormat(slot.handle, x);
    const yParts = intl.numberFormat(slot.handle, y);
    const [range, approximately] = rangePatterns(slot.dataTag);
    const out = [];
    if (joinParts(xParts) === joinParts(yParts)) {
      const [before, after] = patternPieces(approximately);
      const sign = stringTrim(before);
      const space = stringSlice(before, sign.length);
      if (sign !== '') sourced(out, ['approximatelySign', sign], 'shared');
      if (space !== '') sourced(out, ['literal', space], 'shared');
      sourced(out, xParts, 'shared');
      if (after !== '') sourced(out, ['literal', after], 'shared');
      return out;
    }
    const [xFirst, xLast] = numberCore(xParts);
    const [yFirst, yLast] = numberCore(yParts);
    const prefix = arraySlice(xParts, 0, xFirst);
    const suffix = arraySlice(xParts, xLast);
    const affix = joinParts(prefix) + joinParts(suffix);
    const sameAffix = joinParts(prefix) === joinParts(arraySlice(yParts, 0, yFirst)) &&
      joinParts(suffix) === joinParts(arraySlice(yParts, yLast));
    const collapse = sameAffix && (slot.style === 'unit' || codePoints(affix) > 1);
    let [, between] = patternPieces(range);
    const repeated = !collapse && (affix !== '' || joinParts(yParts) !== joinParts(arraySlice(yParts, yFirst, yLast)));
    if (repeated && !regExpTest(/\s/, between)) between = ` ${between} `;
    if (collapse) {
      sourced(out, prefix, 'shared');
      sourced(out, arraySlice(xParts, xFirst, xLast), 'startRange');
      sourced(out, ['literal', between], 'shared');
      sourced(out, arraySlice(yParts, yFirst, yLast), 'endRange');
      sourced(out, suffix, 'shared');
    } else {
      sourced(out, xParts, 'startRange');
      sourced(out, ['literal', between], 'shared');
      sourced(out, yParts, 'endRange');
    }
    return out;
  }

  const NumberFormat = defineClass('NumberFormat', createNumberFormat, {
    callable: true,
    getters: {
      format() {
        const slot = slotOf(this, 'NumberFormat', 'format');
        return bound(slot, 'boundFormat', () => (value) => joinParts(formatNumberParts(slot, value)));
      },
    },
    methods: {
      formatToParts(value) {
        const slot = slotOf(this, 'NumberFormat', 'formatToParts');
        return partsArray(formatNumberParts(slot, value));
      },
      ...rangeMethods('NumberFormat', numberRangeParts),
      resolvedOptions() {
        const slot = slotOf(this, 'NumberFormat', 'resolvedOptions');
        const out = {};
        for (let i = 0; i < numberFormatOptionOrder.length; i++) {
          const key = numberFormatOptionOrder[i];
          if (slot[key] !== undefined) dataProperty(out, key, slot[key]);
        }
        return out;
      },
    },
  });

  // ------------------------------------------------------------------- PluralRules --
  const PluralRules = defineClass('PluralRules', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    matcherOption(options);
    const type = getOption(options, 'type', 'string', ['cardinal', 'ordinal'], 'cardinal');
    const notation = getOption(options, 'notation', 'string', ['standard', 'scientific', 'engineering', 'compact'], 'standard');
    const compactDisplay = getOption(options, 'compactDisplay', 'string', ['short', 'long'], 'short');
    const slot = { __proto__: null, type, notation };
    if (notation === 'compact') slot.compactDisplay = compactDisplay;
    digitOptions(slot, options, 0, 3, notation);
    const r = resolveLocale(requested, {}, [], () => false);
    slot.locale = r.locale;
    slot.handle = pluralHandle(r.dataLocale, type === 'ordinal', slot);
    return slot;
  }, {
    methods: {
      select(value) {
        const slot = slotOf(this, 'PluralRules', 'select');
        return intl.pluralSelect(slot.handle, pluralOperand(+value), undefined);
      },
      selectRange(start, end) {
        const slot = slotOf(this, 'PluralRules', 'selectRange');
        if (start === undefined || end === undefined) throw new TypeErrorCtor('start and end are required');
        const x = +start;
        const y = +end;
        if (isNaNumber(x) || isNaNumber(y)) throw new RangeErrorCtor('Invalid range: NaN');
        return intl.pluralSelect(slot.handle, pluralOperand(x), pluralOperand(y));
      },
      resolvedOptions() {
        const slot = slotOf(this, 'PluralRules', 'resolvedOptions');
        const out = { locale: slot.locale, type: slot.type, notation: slot.notation };
        if (slot.compactDisplay !== undefined) dataProperty(out, 'compactDisplay', slot.compactDisplay);
        dataProperty(out, 'minimumIntegerDigits', slot.minimumIntegerDigits);
        for (const key of ['minimumFractionDigits', 'maximumFractionDigits', 'minimumSignificantDigits', 'maximumSignificantDigits']) {
          if (slot[key] !== undefined) dataProperty(out, key, slot[key]);
        }
        dataProperty(out, 'pluralCategories', intl.pluralCategories(slot.handle));
        for (const key of ['roundingIncrement', 'roundingMode', 'roundingPriority', 'trailingZeroDisplay']) dataProperty(out, key, slot[key]);
        return out;
      },
    },
  });

  // Infinities and NaN have the "other" form; the native side takes finite values.
  function pluralOperand(x) {
    return isFiniteNumber(x) ? x : 1e21 + 0.5;
  }

  function pluralHandle(dataLocale, ordinal, spec) {
    let key = `p|${dataLocale}|${ordinal}`;
    for (const name of ['minimumIntegerDigits', 'minimumFractionDigits', 'maximumFractionDigits', 'minimumSignificantDigits',
      'maximumSignificantDigits', 'roundingType', 'roundingMode', 'roundingIncrement', 'trailingZeroDisplay']) key += `|${spec[name]}`;
    return cached(key, () => intl.pluralRulesNew(dataLocale, ordinal, spec));
  }

  // ----------------------------------------------------------------------- Collator --
  const collations = ['compat', 'dict', 'emoji', 'eor', 'phonebk', 'phonetic', 'pinyin', 'searchjl', 'stroke', 'trad', 'unihan', 'zhuyin'];
  const Collator = defineClass('Collator', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    const usage = getOption(options, 'usage', 'string', ['sort', 'search'], 'sort');
    matcherOption(options);
    const collation = getOption(options, 'collation', 'string', undefined, undefined);
    if (collation !== undefined && !regExpTest(typeSequence, collation)) throw new RangeErrorCtor(`Invalid collation : ${collation}`);
    const numericOption = getOption(options, 'numeric', 'boolean', undefined, undefined);
    const caseFirstOption = getOption(options, 'caseFirst', 'string', ['upper', 'lower', 'false'], undefined);
    const r = resolveLocale(requested, { co: collation, kn: numericOption === undefined ? undefined : `${numericOption}`, kf: caseFirstOption },
      ['co', 'kf', 'kn'], (key, value) => {
        if (key === 'kn') return value === 'true' || value === 'false';
        if (key === 'kf') return value === 'upper' || value === 'lower' || value === 'false';
        return arrayIndexOf(collations, value) >= 0 && value !== 'search' && value !== 'standard';
      });
    const sensitivity = getOption(options, 'sensitivity', 'string', ['base', 'accent', 'case', 'variant'], 'variant');
    const ignorePunctuation = getOption(options, 'ignorePunctuation', 'boolean', undefined, false);
    const slot = {
      __proto__: null,
      locale: r.locale,
      usage,
      sensitivity,
      ignorePunctuation,
      collation: r.co === undefined ? 'default' : r.co,
      numeric: r.kn === 'true',
      caseFirst: r.kf === undefined ? 'false' : r.kf,
    };
    const keys = [];
    if (usage === 'search') arrayPush(keys, 'co-search');
    else if (r.co !== undefined) arrayPush(keys, `co-${r.co}`);
    if (r.kf !== undefined && r.kf !== 'false') arrayPush(keys, `kf-${r.kf}`);
    if (slot.numeric) arrayPush(keys, 'kn');
    const tag = dataTag({ dataLocale: r.dataLocale }, keys);
    slot.handle = cached(`c|${tag}|${sensitivity}|${ignorePunctuation}`, () => intl.collatorNew(tag, sensitivity, ignorePunctuation));
    return slot;
  }, {
    callable: true,
    getters: {
      compare() {
        const slot = slotOf(this, 'Collator', 'compare');
        return bound(slot, 'boundCompare', () => (x, y) => intl.collatorCompare(slot.handle, toWellFormed(`${x}`), toWellFormed(`${y}`)));
      },
    },
    methods: {
      resolvedOptions() {
        const slot = slotOf(this, 'Collator', 'resolvedOptions');
        return {
          locale: slot.locale, usage: slot.usage, sensitivity: slot.sensitivity, ignorePunctuation: slot.ignorePunctuation,
          collation: slot.collation, numeric: slot.numeric, caseFirst: slot.caseFirst,
        };
      },
    },
  });

  // ----------------------------------------------------------------- DateTimeFormat --
  const calendars = ['buddhist', 'gregory', 'japanese'];
  // DefaultTimeZone: the host's zone, which the run was given (UTC if it names none we know).
  let defaultZone;
  function defaultTimeZone() {
    if (defaultZone === undefined) defaultZone = intl.defaultTimeZone();
    return defaultZone;
  }
  const dateTimeComponents = [
    ['weekday', ['narrow', 'short', 'long']],
    ['era', ['narrow', 'short', 'long']],
    ['year', ['2-digit', 'numeric']],
    ['month', ['2-digit', 'numeric', 'narrow', 'short', 'long']],
    ['day', ['2-digit', 'numeric']],
    ['dayPeriod', ['narrow', 'short', 'long']],
    ['hour', ['2-digit', 'numeric']],
    ['minute', ['2-digit', 'numeric']],
    ['second', ['2-digit', 'numeric']],
    ['fractionalSecondDigits', undefined],
    ['timeZoneName', ['short', 'long', 'shortOffset', 'longOffset', 'shortGeneric', 'longGeneric']],
  ];
  const dateTimeOptionOrder = ['locale', 'calendar', 'numberingSystem', 'timeZone', 'hourCycle', 'hour12', 'weekday', 'era',
    'year', 'month', 'day', 'dayPeriod', 'hour', 'minute', 'second', 'fractionalSecondDigits', 'timeZoneName', 'dateStyle', 'timeStyle'];

  function canonicalTimeZone(name) {
    const zone = intl.timeZoneCanonical(`${name}`);
    if (zone === undefined) throw new RangeErrorCtor(`Invalid time zone specified: ${name}`);
    return zone;
  }

  // CreateDateTimeFormat; `required` and `defaults` as the standard's callers pass them.
  function createDateTimeFormat(locales, options, required, defaults) {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    matcherOption(options);
    const calendar = getOption(options, 'calendar', 'string', undefined, undefined);
    if (calendar !== undefined && !regExpTest(typeSequence, calendar)) throw new RangeErrorCtor(`Invalid calendar : ${calendar}`);
    const numberingSystem = numberingSystemOption(options);
    const hour12 = getOption(options, 'hour12', 'boolean', undefined, undefined);
    let hourCycle = getOption(options, 'hourCycle', 'string', ['h11', 'h12', 'h23', 'h24'], undefined);
    if (hour12 !== undefined) hourCycle = null;
    const r = resolveLocale(requested, { ca: calendar === undefined ? undefined : stringToLowerCase(calendar), nu: numberingSystem, hc: hourCycle === null ? undefined : hourCycle },
      ['ca', 'hc', 'nu'], (key, value) => {
        if (key === 'ca') return arrayIndexOf(calendars, value) >= 0;
        if (key === 'hc') return hourCycle !== null && (value === 'h11' || value === 'h12' || value === 'h23' || value === 'h24');
        return supportsNumbering(key, value);
      });
    let timeZone = options.timeZone;
    timeZone = timeZone === undefined ? defaultTimeZone() : canonicalTimeZone(`${timeZone}`);
    const bag = objectCreate(null);
    let hasExplicit = false;
    for (let i = 0; i < dateTimeComponents.length; i++) {
      const [name, values] = dateTimeComponents[i];
      const value = name === 'fractionalSecondDigits'
        ? getNumberOption(options, name, 1, 3, undefined)
        : getOption(options, name, 'string', values, undefined);
      bag[name] = value;
      if (value !== undefined) hasExplicit = true;
    }
    getOption(options, 'formatMatcher', 'string', ['basic', 'best fit'], 'best fit');
    const dateStyle = getOption(options, 'dateStyle', 'string', ['full', 'long', 'medium', 'short'], undefined);
    const timeStyle = getOption(options, 'timeStyle', 'string', ['full', 'long', 'medium', 'short'], undefined);
    if (dateStyle !== undefined || timeStyle !== undefined) {
      if (hasExplicit) throw new TypeErrorCtor(`Can't set option ${firstExplicit(bag)} when ${dateStyle !== undefined ? 'dateStyle' : 'timeStyle'} is used`);
    }
    // The native half owns the rest of the standard's checks and the default fields.
    const request = { __proto__: null, calendar: r.ca, numberingSystem: r.nu, hour12, hourCycle: r.hc, timeZone, dateStyle, timeStyle, required, defaults };
    for (const name of ObjectCtor.keys(bag)) request[name] = bag[name];
    const tag = dataTag({ dataLocale: r.dataLocale }, []);
    let key = `d|${r.locale}|${tag}`;
    for (const name of ObjectCtor.keys(request)) key += `|${request[name]}`;
    let resolved = mapGet(nativeCache, key);
    if (resolved === undefined) {
      resolved = intl.dateTimeResolve(r.locale, request);
      mapSet(nativeCache, key, resolved);
    }
    return { __proto__: null, resolved, handle: resolved.handle };
  }

  function firstExplicit(bag) {
    for (const name of ObjectCtor.keys(bag)) if (bag[name] !== undefined) return name;
    return '';
  }

  // TimeClip and the time value a DateTimeFormat formats.
  function timeValue(date) {
    const x = date === undefined ? DateNow() : +date;
    if (!isFiniteNumber(x) || x > 8.64e15 || x < -8.64e15) throw new RangeErrorCtor('Invalid time value');
    return x === 0 ? 0 : (x < 0 ? -mathFloor(-x) : mathFloor(x));
  }

  // A pattern such as `{0} – {1}` or `~{0}` cut at its placeholders.
  function patternPieces(pattern) {
    const first = stringIndexOf(pattern, '{0}');
    const second = stringIndexOf(pattern, '{1}');
    if (second < 0) return [stringSlice(pattern, 0, first), stringSlice(pattern, first + 3)];
    return [stringSlice(pattern, 0, first), stringSlice(pattern, first + 3, second), stringSlice(pattern, second + 3)];
  }

  // Flat [type, value, ...] parts as part objects with their range source.
  function sourced(out, flat, source) {
    for (let i = 0; i < flat.length; i += 2) arrayPush(out, { __proto__: null, type: flat[i], value: flat[i + 1], source });
  }

  function rangePatterns(locale) {
    return cached(`r|${locale}`, () => intl.rangePatterns(locale));
  }

  // PartitionDateTimeRangePattern: one date when both format alike, else both around the
  // locale's range fallback pattern (the fields they share are not merged).
  function dateRangeParts(slot, start, end) {
    if (start === undefined || end === undefined) throw new TypeErrorCtor('formatRange: the start and end dates are required');
    const x = +start;
    const y = +end;
    const xParts = intl.dateTimeFormat(slot.handle, timeValue(x));
    const yParts = intl.dateTimeFormat(slot.handle, timeValue(y));
    const out = [];
    if (joinParts(xParts) === joinParts(yParts)) {
      sourced(out, xParts, 'shared');
      return out;
    }
    const [before, between, after] = patternPieces(rangePatterns(slot.resolved.locale)[2]);
    if (before !== '') sourced(out, ['literal', before], 'shared');
    sourced(out, xParts, 'startRange');
    sourced(out, ['literal', between], 'shared');
    sourced(out, yParts, 'endRange');
    if (after !== '') sourced(out, ['literal', after], 'shared');
    return out;
  }

  // `formatRange` and `formatRangeToParts` of a `kind` whose range parts `rangeParts` makes.
  function rangeMethods(kind, rangeParts) {
    return {
      formatRange(start, end) {
        const parts = rangeParts(slotOf(this, kind, 'formatRange'), start, end);
        let text = '';
        for (let i = 0; i < parts.length; i++) text += parts[i].value;
        return text;
      },
      formatRangeToParts(start, end) {
        const parts = rangeParts(slotOf(this, kind, 'formatRangeToParts'), start, end);
        const out = [];
        for (let i = 0; i < parts.length; i++) arrayPush(out, { type: parts[i].type, value: parts[i].value, source: parts[i].source });
        return out;
      },
    };
  }

  const DateTimeFormat = defineClass('DateTimeFormat', (locales, options) => createDateTimeFormat(locales, options, 'any', 'date'), {
    callable: true,
    getters: {
      format() {
        const slot = slotOf(this, 'DateTimeFormat', 'format');
        return bound(slot, 'boundFormat', () => (date) => joinParts(intl.dateTimeFormat(slot.handle, timeValue(date))));
      },
    },
    methods: {
      formatToParts(date) {
        const slot = slotOf(this, 'DateTimeFormat', 'formatToParts');
        return partsArray(intl.dateTimeFormat(slot.handle, timeValue(date)));
      },
      ...rangeMethods('DateTimeFormat', dateRangeParts),
      resolvedOptions() {
        const slot = slotOf(this, 'DateTimeFormat', 'resolvedOptions');
        const out = {};
        for (let i = 0; i < dateTimeOptionOrder.length; i++) {
          const key = dateTimeOptionOrder[i];
          if (slot.resolved[key] !== undefined) dataProperty(out, key, slot.resolved[key]);
        }
        return out;
      },
    },
  });

  // --------------------------------------------------------------------- ListFormat --
  defineClass('ListFormat', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = optionsObject(options);
    matcherOption(options);
    const r = resolveLocale(requested, {}, [], () => false);
    const type = getOption(options, 'type', 'string', ['conjunction', 'disjunction', 'unit'], 'conjunction');
    const style = getOption(options, 'style', 'string', ['long', 'short', 'narrow'], 'long');
    const handle = cached(`l|${r.dataLocale}|${type}|${style}`, () => intl.listFormatNew(r.dataLocale, type, style));
    return { __proto__: null, locale: r.locale, type, style, handle };
  }, {
    methods: {
      format(list) {
        const slot = slotOf(this, 'ListFormat', 'format');
        return joinParts(intl.listFormat(slot.handle, stringList(list)));
      },
      formatToParts(list) {
        const slot = slotOf(this, 'ListFormat', 'formatToParts');
        return partsArray(intl.listFormat(slot.handle, stringList(list)));
      },
      resolvedOptions() {
        const slot = slotOf(this, 'ListFormat', 'resolvedOptions');
        return { locale: slot.locale, type: slot.type, style: slot.style };
      },
    },
  });

  // StringListFromIterable.
  function stringList(iterable) {
    const out = [];
    if (iterable === undefined) return out;
    for (const value of iterable) {
      if (typeof value !== 'string') throw new TypeErrorCtor(`Iterable yielded ${typeof value === 'symbol' ? 'a symbol' : StringCtor(value)} which is not a string`);
      arrayPush(out, toWellFormed(value));
    }
    return out;
  }

  // ------------------------------------------------------------- RelativeTimeFormat --
  const relativeUnits = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'];
  defineClass('RelativeTimeFormat', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = coerceOptions(options);
    matcherOption(options);
    const numberingSystem = numberingSystemOption(options);
    const r = resolveLocale(requested, { nu: numberingSystem }, ['nu'], supportsNumbering);
    const style = getOption(options, 'style', 'string', ['long', 'short', 'narrow'], 'long');
    const numeric = getOption(options, 'numeric', 'string', ['always', 'auto'], 'always');
    const tag = dataTag(r);
    const handle = cached(`r|${tag}|${style}|${numeric}`, () => intl.relativeTimeNew(tag, style, numeric === 'always'));
    return { __proto__: null, locale: r.locale, style, numeric, numberingSystem: resolvedNumbering(r), handle };
  }, {
    methods: {
      format(value, unit) {
        const slot = slotOf(this, 'RelativeTimeFormat', 'format');
        return joinParts(relativeParts(slot, value, unit));
      },
      formatToParts(value, unit) {
        const slot = slotOf(this, 'RelativeTimeFormat', 'formatToParts');
        const flat = relativeParts(slot, value, unit);
        return partsArray(flat, (part) => { if (part.type !== 'literal') part.unit = slot.lastUnit; });
      },
      resolvedOptions() {
        const slot = slotOf(this, 'RelativeTimeFormat', 'resolvedOptions');
        return { locale: slot.locale, style: slot.style, numeric: slot.numeric, numberingSystem: slot.numberingSystem };
      },
    },
  });

  function relativeParts(slot, value, unit) {
    const x = +value;
    let name = `${unit}`;
    if (!isFiniteNumber(x)) throw new RangeErrorCtor('Invalid value: it must be finite');
    if (name[name.length - 1] === 's') name = stringSlice(name, 0, -1);
    const index = arrayIndexOf(relativeUnits, name);
    if (index < 0) throw new RangeErrorCtor(`Invalid unit argument for format() '${unit}'`);
    slot.lastUnit = name;
    // With numeric "auto", -0 is "now" as 0 is; with "always" its sign says the past.
    return intl.relativeTimeFormat(slot.handle, index, slot.numeric === 'auto' && x === 0 ? 0 : x);
  }

  // ----------------------------------------------------------------- DurationFormat --
  // The units in the standard's table order: the style each may take, its style under
  // "digital", and the NumberFormat unit of its values.
  const durationUnits = [
    ['years', ['long', 'short', 'narrow'], 'short', 'year'],
    ['months', ['long', 'short', 'narrow'], 'short', 'month'],
    ['weeks', ['long', 'short', 'narrow'], 'short', 'week'],
    ['days', ['long', 'short', 'narrow'], 'short', 'day'],
    ['hours', ['long', 'short', 'narrow', 'numeric', '2-digit'], 'numeric', 'hour'],
    ['minutes', ['long', 'short', 'narrow', 'numeric', '2-digit'], 'numeric', 'minute'],
    ['seconds', ['long', 'short', 'narrow', 'numeric', '2-digit'], 'numeric', 'second'],
    ['milliseconds', ['long', 'short', 'narrow', 'numeric'], 'numeric', 'millisecond'],
    ['microseconds', ['long', 'short', 'narrow', 'numeric'], 'numeric', 'microsecond'],
    ['nanoseconds', ['long', 'short', 'narrow', 'numeric'], 'numeric', 'nanosecond'],
  ];
  // ToDurationRecord reads the fields in alphabetical order.
  const durationFieldsRead = ['days', 'hours', 'microseconds', 'milliseconds', 'minutes', 'months', 'nanoseconds', 'seconds', 'weeks', 'years'];

  // GetDurationUnitOptions.
  function durationUnitOptions(options, unit, styles, digitalBase, baseStyle, prevStyle) {
    let style = getOption(options, unit, 'string', styles, undefined);
    let displayDefault = 'always';
    const clock = unit === 'hours' || unit === 'minutes' || unit === 'seconds';
    if (style === undefined) {
      if (baseStyle === 'digital') {
        style = digitalBase;
        if (!clock) displayDefault = 'auto';
      } else if (prevStyle === 'fractional' || prevStyle === 'numeric' || prevStyle === '2-digit') {
        style = 'numeric';
        if (unit !== 'minutes' && unit !== 'seconds') displayDefault = 'auto';
      } else {
        style = baseStyle;
        displayDefault = 'auto';
      }
    }
    const subsecond = unit === 'milliseconds' || unit === 'microseconds' || unit === 'nanoseconds';
    if (style === 'numeric' && subsecond) {
      style = 'fractional';
      displayDefault = 'auto';
    }
    const display = getOption(options, `${unit}Display`, 'string', ['auto', 'always'], displayDefault);
    if (display === 'always' && style === 'fractional') {
      throw new RangeErrorCtor(`${unit}Display "always" cannot go with a fractional ${unit} style`);
    }
    if (prevStyle === 'fractional' && style !== 'fractional') {
      throw new RangeErrorCtor(`${unit} must be numeric after a numeric smaller unit`);
    }
    if (prevStyle === 'numeric' || prevStyle === '2-digit') {
      if (style !== 'fractional' && style !== 'numeric' && style !== '2-digit') {
        throw new RangeErrorCtor(`${unit} must be numeric after a numeric larger unit`);
      }
      if (unit === 'minutes' || unit === 'seconds') style = '2-digit';
    }
    return { __proto__: null, style, display };
  }

  // ToDurationRecord: integral, finite, one sign, and within the standard's range.
  function durationRecord(input) {
    if (typeof input !== 'object' || input === null) {
      if (typeof input === 'string') throw new RangeErrorCtor('Intl.DurationFormat: a duration string needs Temporal, which Exec scripts do not have');
      throw new TypeErrorCtor('Intl.DurationFormat: the duration must be an object');
    }
    const record = { __proto__: null };
    let any = false;
    for (let i = 0; i < durationFieldsRead.length; i++) {
      const field = durationFieldsRead[i];
      const value = input[field];
      record[field] = 0;
      if (value === undefined) continue;
      any = true;
      const n = +value;
      if (!isFiniteNumber(n) || mathFloor(n) !== n) throw new RangeErrorCtor(`Intl.DurationFormat: ${field} must be an integer`);
      record[field] = n + 0; // a mathematical value: -0 is 0
    }
    if (!any) throw new TypeErrorCtor('Intl.DurationFormat: the duration has no unit');
    let sign = 0;
    for (let i = 0; i < durationFieldsRead.length; i++) {
      const value = record[durationFieldsRead[i]];
      const own = value > 0 ? 1 : value < 0 ? -1 : 0;
      if (own !== 0 && sign !== 0 && own !== sign) throw new RangeErrorCtor('Intl.DurationFormat: the units must not have mixed signs');
      if (own !== 0) sign = own;
    }
    record.sign = sign;
    const limit32 = 2 ** 32;
    if (record.years >= limit32 || record.years <= -limit32 || record.months >= limit32 || record.months <= -limit32 ||
        record.weeks >= limit32 || record.weeks <= -limit32) {
      throw new RangeErrorCtor('Intl.DurationFormat: years, months and weeks must be below 2^32');
    }
    // The time in nanoseconds, exactly: below 2^53 seconds.
    const ns = BigIntCtor(record.days) * 86400000000000n + BigIntCtor(record.hours) * 3600000000000n +
      BigIntCtor(record.minutes) * 60000000000n + BigIntCtor(record.seconds) * 1000000000n +
      BigIntCtor(record.milliseconds) * 1000000n + BigIntCtor(record.microseconds) * 1000n + BigIntCtor(record.nanoseconds);
    const bound = BigIntCtor(2 ** 53) * 1000000000n;
    if (ns >= bound || ns <= -bound) throw new RangeErrorCtor('Intl.DurationFormat: the time must be below 2^53 seconds');
    return record;
  }

  // The unit `unit` and the ones below it, as one exact decimal of that unit
  // (ComputeFractionalDigits): seconds with 9 fraction digits, milliseconds with 6.
  function fractionalValue(record, unit) {
    let ns = BigIntCtor(record.nanoseconds);
    let exponent = 3;
    if (unit !== 'microseconds') {
      ns += BigIntCtor(record.microseconds) * 1000n;
      exponent = 6;
      if (unit !== 'milliseconds') {
        ns += BigIntCtor(record.milliseconds) * 1000000n;
        exponent = 9;
      }
    }
    ns += BigIntCtor(record[unit]) * 10n ** BigIntCtor(exponent);
    const negative = ns < 0n;
    if (negative) ns = -ns;
    const scale = 10n ** BigIntCtor(exponent);
    const fraction = `${ns % scale}`;
    let text = `${ns / scale}.`;
    for (let i = fraction.length; i < exponent; i++) text += '0';
    return `${negative ? '-' : ''}${text}${fraction}`;
  }

  // One unit's value as NumberFormat parts, each tagged with the unit.
  function durationNumberParts(slot, value, unit, nfOptions) {
    nfOptions.numberingSystem = slot.numberingSystem;
    const format = createNumberFormat(slot.locale, nfOptions);
    const flat = formatNumberParts(format, value);
    const out = [];
    for (let i = 0; i < flat.length; i += 2) arrayPush(out, { __proto__: null, type: flat[i], value: flat[i + 1], unit });
    return out;
  }

  // FormatNumericUnits: hours, minutes and seconds as one clock-like element.
  function numericDurationParts(slot, record, firstUnit, signDisplayed) {
    const out = [];
    let hours = record.hours;
    let minutes = record.minutes;
    const subseconds = record.milliseconds !== 0 || record.microseconds !== 0 || record.nanoseconds !== 0;
    const seconds = subseconds ? fractionalValue(record, 'seconds') : record.seconds;
    const hoursShown = firstUnit === 'hours' && (hours !== 0 || slot.units.hours.display === 'always');
    const secondsShown = seconds !== 0 || slot.units.seconds.display === 'always';
    const minutesShown = (firstUnit === 'hours' || firstUnit === 'minutes') &&
      ((hoursShown && secondsShown) || minutes !== 0 || slot.units.minutes.display === 'always');
    const push = (parts) => { for (let i = 0; i < parts.length; i++) arrayPush(out, parts[i]); };
    const options = (style) => {
      const nf = { __proto__: null, useGrouping: false };
      if (style === '2-digit') nf.minimumIntegerDigits = 2;
      if (!signDisplayed) nf.signDisplay = 'never';
      return nf;
    };
    if (hoursShown) {
      if (hours === 0 && record.sign < 0) hours = -0;
      push(durationNumberParts(slot, hours, 'hour', options(slot.units.hours.style)));
      signDisplayed = false;
    }
    if (minutesShown) {
      if (minutes === 0 && record.sign < 0 && signDisplayed) minutes = -0;
      if (hoursShown) arrayPush(out, { __proto__: null, type: 'literal', value: slot.separator });
      push(durationNumberParts(slot, minutes, 'minute', options(slot.units.minutes.style)));
      signDisplayed = false;
    }
    if (secondsShown) {
      if (minutesShown) arrayPush(out, { __proto__: null, type: 'literal', value: slot.separator });
      const nf = options(slot.units.seconds.style);
      nf.maximumFractionDigits = slot.fractionalDigits === undefined ? 9 : slot.fractionalDigits;
      nf.minimumFractionDigits = slot.fractionalDigits === undefined ? 0 : slot.fractionalDigits;
      nf.roundingMode = 'trunc';
      push(durationNumberParts(slot, seconds, 'second', nf));
    }
    return out;
  }

  // PartitionDurationFormatPattern: each shown unit's parts, joined as a unit list.
  function durationParts(slot, record) {
    const elements = [];
    let signDisplayed = true;
    for (let i = 0; i < durationUnits.length; i++) {
      const [unit, , , numberUnit] = durationUnits[i];
      const { style, display } = slot.units[unit];
      if (style === 'numeric' || style === '2-digit') {
        const parts = numericDurationParts(slot, record, unit, signDisplayed);
        if (parts.length > 0) arrayPush(elements, parts);
        break;
      }
      let value = record[unit];
      const nf = { __proto__: null };
      let last = false;
      if ((unit === 'seconds' || unit === 'milliseconds' || unit === 'microseconds') && slot.units[durationUnits[i + 1][0]].style === 'fractional') {
        value = fractionalValue(record, unit);
        nf.maximumFractionDigits = slot.fractionalDigits === undefined ? 9 : slot.fractionalDigits;
        nf.minimumFractionDigits = slot.fractionalDigits === undefined ? 0 : slot.fractionalDigits;
        nf.roundingMode = 'trunc';
        last = true;
      }
      // A decimal text is zero only when all its digits are.
      const zero = typeof value === 'string' ? !regExpTest(/[1-9]/, value) : value === 0;
      if (!zero || display === 'always') {
        if (signDisplayed) {
          signDisplayed = false;
          if (zero && record.sign < 0) value = typeof value === 'string' ? `-${value}` : -0;
        } else {
          nf.signDisplay = 'never';
        }
        nf.style = 'unit';
        nf.unit = numberUnit;
        nf.unitDisplay = style;
        arrayPush(elements, durationNumberParts(slot, value, numberUnit, nf));
      }
      if (last) break;
    }
    // ListFormatParts.
    const strings = [];
    for (let i = 0; i < elements.length; i++) {
      let text = '';
      for (let j = 0; j < elements[i].length; j++) text += elements[i][j].value;
      arrayPush(strings, text);
    }
    const listStyle = slot.style === 'digital' ? 'short' : slot.style;
    const handle = cached(`l|${slot.dataLocale}|unit|${listStyle}`, () => intl.listFormatNew(slot.dataLocale, 'unit', listStyle));
    const flat = intl.listFormat(handle, strings);
    const out = [];
    let next = 0;
    for (let i = 0; i < flat.length; i += 2) {
      if (flat[i] === 'element') {
        const element = elements[next++];
        for (let j = 0; j < element.length; j++) arrayPush(out, element[j]);
      } else {
        arrayPush(out, { __proto__: null, type: flat[i], value: flat[i + 1] });
      }
    }
    return out;
  }

  defineClass('DurationFormat', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = optionsObject(options);
    matcherOption(options);
    const numberingSystem = numberingSystemOption(options);
    const r = resolveLocale(requested, { nu: numberingSystem }, ['nu'], supportsNumbering);
    const slot = { __proto__: null, locale: r.locale, dataLocale: r.dataLocale, numberingSystem: resolvedNumbering(r) };
    slot.style = getOption(options, 'style', 'string', ['long', 'short', 'narrow', 'digital'], 'short');
    slot.units = { __proto__: null };
    let prevStyle = '';
    for (let i = 0; i < durationUnits.length; i++) {
      const [unit, styles, digitalBase] = durationUnits[i];
      const unitOptions = durationUnitOptions(options, unit, styles, digitalBase, slot.style, prevStyle);
      slot.units[unit] = unitOptions;
      if (i >= 4) prevStyle = unitOptions.style;
    }
    slot.fractionalDigits = getNumberOption(options, 'fractionalDigits', 0, 9, undefined);
    slot.separator = intl.timeSeparator(r.dataLocale);
    return slot;
  }, {
    methods: {
      format(duration) {
        const slot = slotOf(this, 'DurationFormat', 'format');
        const parts = durationParts(slot, durationRecord(duration));
        let text = '';
        for (let i = 0; i < parts.length; i++) text += parts[i].value;
        return text;
      },
      formatToParts(duration) {
        const slot = slotOf(this, 'DurationFormat', 'formatToParts');
        const parts = durationParts(slot, durationRecord(duration));
        const out = [];
        for (let i = 0; i < parts.length; i++) {
          const part = { type: parts[i].type, value: parts[i].value };
          if (parts[i].unit !== undefined) dataProperty(part, 'unit', parts[i].unit);
          arrayPush(out, part);
        }
        return out;
      },
      resolvedOptions() {
        const slot = slotOf(this, 'DurationFormat', 'resolvedOptions');
        const out = {};
        dataProperty(out, 'locale', slot.locale);
        dataProperty(out, 'numberingSystem', slot.numberingSystem);
        dataProperty(out, 'style', slot.style);
        for (let i = 0; i < durationUnits.length; i++) {
          const unit = durationUnits[i][0];
          const { style, display } = slot.units[unit];
          dataProperty(out, unit, style === 'fractional' ? 'numeric' : style);
          dataProperty(out, `${unit}Display`, display);
        }
        if (slot.fractionalDigits !== undefined) dataProperty(out, 'fractionalDigits', slot.fractionalDigits);
        return out;
      },
    },
  });

  // ---------------------------------------------------------------------- Segmenter --
  const segmentsProto = objectCreate(ObjectCtor.prototype);
  const segmentIteratorProto = objectCreate(getPrototypeOf(getPrototypeOf([][iteratorSymbol]())));
  defineClass('Segmenter', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    options = optionsObject(options);
    matcherOption(options);
    const r = resolveLocale(requested, {}, [], () => false);
    const granularity = getOption(options, 'granularity', 'string', ['grapheme', 'word', 'sentence'], 'grapheme');
    return { __proto__: null, locale: r.locale, granularity };
  }, {
    methods: {
      segment(text) {
        const slot = slotOf(this, 'Segmenter', 'segment');
        const string = `${text}`;
        const segments = objectCreate(segmentsProto);
        weakMapSet(slots, segments, { __proto__: null, kind: 'Segments', string, granularity: slot.granularity, breaks: undefined });
        return segments;
      },
      resolvedOptions() {
        const slot = slotOf(this, 'Segmenter', 'resolvedOptions');
        return { locale: slot.locale, granularity: slot.granularity };
      },
    },
  });

  // The boundaries of a Segments object's text, found once, when first needed.
  function breaksOf(slot) {
    if (slot.breaks === undefined) slot.breaks = intl.segment(slot.granularity, toWellFormed(slot.string));
    return slot.breaks;
  }

  // The segment data object for the segment that starts at breaks[2 * i].
  function segmentData(slot, i) {
    const breaks = breaksOf(slot);
    const start = breaks[2 * i];
    const end = breaks[2 * i + 2];
    const data = { segment: stringSlice(slot.string, start, end), index: start, input: slot.string };
    if (slot.granularity === 'word') dataProperty(data, 'isWordLike', breaks[2 * i + 3] === 1);
    return data;
  }

  defineProperty(segmentsProto, 'containing', {
    value: { containing(index) {
      const slot = slotOf(this, 'Segments', 'containing');
      let n = +index;
      n = isNaNumber(n) ? 0 : (n < 0 ? -mathFloor(-n) : mathFloor(n));
      if (n < 0 || n >= slot.string.length) return undefined;
      const breaks = breaksOf(slot);
      for (let i = 0; 2 * i + 2 < breaks.length; i++) {
        if (breaks[2 * i + 2] > n) return segmentData(slot, i);
      }
      return undefined;
    } }.containing,
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(segmentsProto, iteratorSymbol, {
    value: { [iteratorSymbol]() {
      const slot = slotOf(this, 'Segments', '[Symbol.iterator]');
      const iterator = objectCreate(segmentIteratorProto);
      weakMapSet(slots, iterator, { __proto__: null, kind: 'Segment Iterator', segments: slot, next: 0 });
      return iterator;
    } }[iteratorSymbol],
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(segmentIteratorProto, 'next', {
    value: { next() {
      const slot = slotOf(this, 'Segment Iterator', 'next');
      const breaks = breaksOf(slot.segments);
      if (2 * slot.next + 2 >= breaks.length) return { value: undefined, done: true };
      const value = segmentData(slot.segments, slot.next);
      slot.next++;
      return { value, done: false };
    } }.next,
    writable: true, enumerable: false, configurable: true,
  });
  defineProperty(segmentIteratorProto, toStringTagSymbol, { value: 'Segmenter String Iterator', configurable: true });

  // ------------------------------------------------------------------- DisplayNames --
  const dateTimeFields = ['era', 'year', 'quarter', 'month', 'weekOfYear', 'weekday', 'day', 'dayPeriod', 'hour', 'minute', 'second', 'timeZoneName'];
  defineClass('DisplayNames', (locales, options) => {
    const requested = canonicalizeLocaleList(locales);
    if (options === undefined) throw new TypeErrorCtor('Intl.DisplayNames requires an options object with a type');
    options = optionsObject(options);
    matcherOption(options);
    const r = resolveLocale(requested, {}, [], () => false);
    const style = getOption(options, 'style', 'string', ['narrow', 'short', 'long'], 'long');
    const type = getOption(options, 'type', 'string', ['language', 'region', 'script', 'currency', 'calendar', 'dateTimeField'], undefined);
    if (type === undefined) throw new TypeErrorCtor('Intl.DisplayNames requires a type');
    const fallback = getOption(options, 'fallback', 'string', ['code', 'none'], 'code');
    const languageDisplay = getOption(options, 'languageDisplay', 'string', ['dialect', 'standard'], 'dialect');
    const slot = { __proto__: null, locale: r.locale, dataLocale: r.dataLocale, style, type, fallback };
    if (type === 'language') slot.languageDisplay = languageDisplay;
    return slot;
  }, {
    length: 2,
    methods: {
      of(code) {
        const slot = slotOf(this, 'DisplayNames', 'of');
        const canonical = canonicalDisplayCode(slot.type, `${code}`);
        const name = slot.type === 'language' || slot.type === 'region' || slot.type === 'script'
          ? intl.displayName(slot.dataLocale, slot.type, slot.style, slot.languageDisplay !== 'standard', canonical)
          : undefined;
        if (name !== undefined) return name;
        return slot.fallback === 'code' ? canonical : undefined;
      },
      resolvedOptions() {
        const slot = slotOf(this, 'DisplayNames', 'resolvedOptions');
        const out = { locale: slot.locale, style: slot.style, type: slot.type, fallback: slot.fallback };
        if (slot.languageDisplay !== undefined) dataProperty(out, 'languageDisplay', slot.languageDisplay);
        return out;
      },
    },
  });

  // CanonicalCodeForDisplayNames: the code checked as well-formed for its type, in the
  // case the standard gives it.
  function canonicalDisplayCode(type, code) {
    const invalid = () => new RangeErrorCtor(`invalid_argument: ${code} is not a well-formed ${type} code`);
    if (type === 'language') {
      if (!regExpTest(/^[a-zA-Z]{2,3}(-[a-zA-Z]{4})?(-([a-zA-Z]{2}|\d{3}))?(-([a-zA-Z0-9]{5,8}|\d[a-zA-Z0-9]{3}))*$|^[a-zA-Z]{5,8}(-[a-zA-Z]{4})?(-([a-zA-Z]{2}|\d{3}))?(-([a-zA-Z0-9]{5,8}|\d[a-zA-Z0-9]{3}))*$/, code)) throw invalid();
      return intl.canonicalizeLocale(code);
    }
    if (type === 'region') {
      if (!regExpTest(/^([a-zA-Z]{2}|\d{3})$/, code)) throw invalid();
      return stringToUpperCase(code);
    }
    if (type === 'script') {
      if (!regExpTest(/^[a-zA-Z]{4}$/, code)) throw invalid();
      return stringToUpperCase(code[0]) + stringToLowerCase(stringSlice(code, 1));
    }
    if (type === 'currency') {
      if (!regExpTest(/^[a-zA-Z]{3}$/, code)) throw invalid();
      return stringToUpperCase(code);
    }
    if (type === 'calendar') {
      if (!regExpTest(typeSequence, code)) throw invalid();
      return stringToLowerCase(code);
    }
    if (arrayIndexOf(dateTimeFields, code) < 0) throw invalid();
    return code;
  }

  // ------------------------------------------------------------------------- Locale --
  const localeKeys = [['calendar', 'ca'], ['caseFirst', 'kf'], ['collation', 'co'], ['hourCycle', 'hc'], ['numeric', 'kn'], ['numberingSystem', 'nu']];
  const Locale = defineClass('Locale', (tag, options) => {
    if (typeof tag !== 'string' && (typeof tag !== 'object' || tag === null)) throw new TypeErrorCtor('First argument to Intl.Locale constructor can\'t be empty or missing');
    const tagSlot = localeSlot(tag);
    let text = tagSlot !== undefined && tagSlot.kind === 'Locale' ? tagSlot.tag : `${tag}`;
    options = coerceOptions(options);
    text = intl.canonicalizeLocale(text);
    const parts = splitExtension(text);
    let base = parts.base;
    const language = getOption(options, 'language', 'string', undefined, undefined);
    const script = getOption(options, 'script', 'string', undefined, undefined);
    const region = getOption(options, 'region', 'string', undefined, undefined);
    if (language !== undefined || script !== undefined || region !== undefined) {
      const subtags = stringSplit(base, '-');
      let lang = subtags[0];
      let i = 1;
      let scr = subtags[i] !== undefined && subtags[i].length === 4 ? subtags[i++] : undefined;
      let reg = subtags[i] !== undefined && (subtags[i].length === 2 || regExpTest(/^\d{3}$/, subtags[i])) ? subtags[i++] : undefined;
      const variants = [];
      for (; i < subtags.length; i++) arrayPush(variants, subtags[i]);
      if (language !== undefined) {
        if (!regExpTest(/^([a-zA-Z]{2,3}|[a-zA-Z]{5,8})$/, language)) throw new RangeErrorCtor('Incorrect locale information provided');
        lang = language;
      }
      if (script !== undefined) {
        if (!regExpTest(/^[a-zA-Z]{4}$/, script)) throw new RangeErrorCtor('Incorrect locale information provided');
        scr = script;
      }
      if (region !== undefined) {
        if (!regExpTest(/^([a-zA-Z]{2}|\d{3})$/, region)) throw new RangeErrorCtor('Incorrect locale information provided');
        reg = region;
      }
      base = lang;
      if (scr !== undefined) base += `-${scr}`;
      if (reg !== undefined) base += `-${reg}`;
      if (variants.length > 0) base += `-${arrayJoin(variants, '-')}`;
    }
    const keywords = parts.keywords;
    for (let i = 0; i < localeKeys.length; i++) {
      const [property, key] = localeKeys[i];
      let value;
      if (property === 'numeric') {
        value = options.numeric;
        if (value !== undefined) value = `${!!value}`;
      } else {
        value = getOption(options, property, 'string', property === 'caseFirst' ? ['upper', 'lower', 'false'] : (property === 'hourCycle' ? ['h11', 'h12', 'h23', 'h24'] : undefined), undefined);
        if (value !== undefined && !regExpTest(typeSequence, value)) throw new RangeErrorCtor(`Incorrect locale information provided`);
      }
      if (value !== undefined) keywords[key] = value;
    }
    const keys = arraySort(ObjectCtor.keys(keywords));
    let extension = '';
    for (let i = 0; i < keys.length; i++) {
      const value = keywords[keys[i]];
      extension += value === '' || value === 'true' ? `-${keys[i]}` : `-${keys[i]}-${value}`;
    }
    let full = base;
    if (extension !== '') full += `-u${extension}`;
    if (parts.other !== '') full += `-${parts.other}`;
    return { __proto__: null, tag: intl.canonicalizeLocale(full) };
  }, {
    length: 1,
    methods: {
      toString() { return slotOf(this, 'Locale', 'toString').tag; },
      toJSON() { return slotOf(this, 'Locale', 'toJSON').tag; },
      maximize() { return new Locale(intl.maximize(slotOf(this, 'Locale', 'maximize').tag)); },
      minimize() { return new Locale(intl.minimize(slotOf(this, 'Locale', 'minimize').tag)); },
      getCalendars() { return [localeKeyword(slotOf(this, 'Locale', 'getCalendars'), 'ca') || 'gregory']; },
      getCollations() { return [localeKeyword(slotOf(this, 'Locale', 'getCollations'), 'co') || 'default']; },
      getHourCycles() {
        const slot = slotOf(this, 'Locale', 'getHourCycles');
        const hc = localeKeyword(slot, 'hc');
        if (hc !== undefined) return [hc];
        const resolved = new DateTimeFormat(slot.tag, { hour: 'numeric' }).resolvedOptions();
        return [resolved.hourCycle];
      },
      getNumberingSystems() {
        const slot = slotOf(this, 'Locale', 'getNumberingSystems');
        return [localeKeyword(slot, 'nu') || intl.defaultNumberingSystem(splitExtension(slot.tag).base)];
      },
      getTextInfo() {
        const slot = slotOf(this, 'Locale', 'getTextInfo');
        return { direction: intl.isRightToLeft(slot.tag) ? 'rtl' : 'ltr' };
      },
    },
    getters: {
      baseName() { return splitExtension(slotOf(this, 'Locale', 'baseName').tag).base; },
      language() { return stringSplit(slotOf(this, 'Locale', 'language').tag, '-')[0]; },
      script() {
        const subtags = stringSplit(splitExtension(slotOf(this, 'Locale', 'script').tag).base, '-');
        return subtags[1] !== undefined && subtags[1].length === 4 ? subtags[1] : undefined;
      },
      region() { return localeRegion(slotOf(this, 'Locale', 'region').tag); },
      variants() {
        const subtags = stringSplit(splitExtension(slotOf(this, 'Locale', 'variants').tag).base, '-');
        const out = [];
        for (let i = 1; i < subtags.length; i++) if (subtags[i].length >= 5 || regExpTest(/^\d[0-9a-z]{3}$/, subtags[i])) arrayPush(out, subtags[i]);
        return out.length === 0 ? undefined : arrayJoin(out, '-');
      },
      calendar() { return localeKeyword(slotOf(this, 'Locale', 'calendar'), 'ca'); },
      caseFirst() { return localeKeyword(slotOf(this, 'Locale', 'caseFirst'), 'kf'); },
      collation() { return localeKeyword(slotOf(this, 'Locale', 'collation'), 'co'); },
      hourCycle() { return localeKeyword(slotOf(this, 'Locale', 'hourCycle'), 'hc'); },
      numberingSystem() { return localeKeyword(slotOf(this, 'Locale', 'numberingSystem'), 'nu'); },
      numeric() {
        const value = splitExtension(slotOf(this, 'Locale', 'numeric').tag).keywords.kn;
        return value === '' || value === 'true';
      },
    },
  });

  function localeKeyword(slot, key) {
    const value = splitExtension(slot.tag).keywords[key];
    return value === undefined ? undefined : (value === '' ? 'true' : value);
  }

  function localeRegion(tag) {
    const subtags = stringSplit(splitExtension(tag).base, '-');
    for (let i = 1; i < subtags.length && i < 3; i++) {
      if (subtags[i].length === 2 || regExpTest(/^\d{3}$/, subtags[i])) return subtags[i];
    }
    return undefined;
  }

  // ------------------------------------------------------------------ Intl functions --
  const intlFunctions = {
    getCanonicalLocales(locales) {
      return canonicalizeLocaleList(locales);
    },
    supportedValuesOf(key) {
      const name = `${key}`;
      let values;
      if (name === 'calendar') values = calendars;
      else if (name === 'collation') values = collations;
      else if (name === 'currency') values = stringSplit(currencyCodes, ' ');
      else if (name === 'numberingSystem') values = numberingSystems;
      else if (name === 'timeZone') values = intl.timeZones();
      else if (name === 'unit') values = sanctionedUnits;
      else throw new RangeErrorCtor(`Invalid key : ${name}`);
      const out = [];
      for (let i = 0; i < values.length; i++) arrayPush(out, values[i]);
      return arraySort(out);
    },
  };
  for (const name of ['getCanonicalLocales', 'supportedValuesOf']) {
    defineProperty(Intl, name, { value: intlFunctions[name], writable: true, enumerable: false, configurable: true });
  }
  defineProperty(Intl, toStringTagSymbol, { value: 'Intl', writable: false, enumerable: false, configurable: true });
  defineProperty(globalThis, 'Intl', { value: Intl, writable: true, enumerable: false, configurable: true });

  // ------------------------------------------------- locale-taking methods of others --
  // Each makes (or reuses) the Intl object the standard says it does.

  // The objects made for calls with no options and at most one locale string, by kind and
  // locale: making one again would read nothing a script can see, so the same one serves
  // (`(x).toLocaleString("de-DE")` in a loop costs one). Bounded; past it, each call makes
  // its own.
  const plainSlots = new MapCtor();
  const MAX_PLAIN_SLOTS = 256;
  let plainSlotCount = 0;
  function plainSlot(kind, locales, options, make) {
    if (options !== undefined || (locales !== undefined && typeof locales !== 'string')) return make(locales, options);
    const key = `${kind}|${locales}`;
    let slot = mapGet(plainSlots, key);
    if (slot === undefined) {
      slot = make(locales, options);
      if (plainSlotCount < MAX_PLAIN_SLOTS) {
        mapSet(plainSlots, key, slot);
        plainSlotCount++;
      }
    }
    return slot;
  }

  const localeMethods = {
    numberToLocaleString(locales = undefined, options = undefined) {
      const x = numberValueOf(this);
      const slot = plainSlot('number', locales, options, createNumberFormat);
      return joinParts(formatNumberParts(slot, x));
    },
    bigintToLocaleString(locales = undefined, options = undefined) {
      const x = bigintValueOf(this);
      const slot = plainSlot('number', locales, options, createNumberFormat);
      return joinParts(formatNumberParts(slot, x));
    },
    dateToLocaleString(locales = undefined, options = undefined) {
      return formatDate(this, locales, options, 'any', 'all');
    },
    dateToLocaleDateString(locales = undefined, options = undefined) {
      return formatDate(this, locales, options, 'date', 'date');
    },
    dateToLocaleTimeString(locales = undefined, options = undefined) {
      return formatDate(this, locales, options, 'time', 'time');
    },
    localeCompare(that, locales = undefined, options = undefined) {
      if (this === undefined || this === null) throw new TypeErrorCtor('String.prototype.localeCompare called on null or undefined');
      const s = `${this}`;
      const t = `${that}`;
      const slot = plainSlot('collator', locales, options, (l, o) => weakMapGet(slots, new Collator(l, o)));
      return intl.collatorCompare(slot.handle, toWellFormed(s), toWellFormed(t));
    },
    arrayToLocaleString(locales = undefined, options = undefined) {
      const array = toObject(this);
      const length = toLength(array.length);
      let out = '';
      for (let k = 0; k < length; k++) {
        if (k > 0) out += ',';
        const element = array[k];
        if (element !== undefined && element !== null) {
          const method = toObject(element).toLocaleString;
          if (typeof method !== 'function') throw new TypeErrorCtor('toLocaleString is not a function');
          out += `${apply(method, element, [locales, options])}`;
        }
      }
      return out;
    },
  };

  function formatDate(date, locales, options, required, defaults) {
    const x = dateGetTime(date);
    if (isNaNumber(x)) return 'Invalid Date';
    const slot = plainSlot(`date|${required}|${defaults}`, locales, options, (l, o) => createDateTimeFormat(l, o, required, defaults));
    return joinParts(intl.dateTimeFormat(slot.handle, x));
  }

  const install = (target, name, value) => defineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
  const renamed = (f, name) => {
    defineProperty(f, 'name', { value: name, configurable: true });
    return f;
  };
  install(Number.prototype, 'toLocaleString', renamed(localeMethods.numberToLocaleString, 'toLocaleString'));
  install(BigInt.prototype, 'toLocaleString', renamed(localeMethods.bigintToLocaleString, 'toLocaleString'));
  install(Date.prototype, 'toLocaleString', renamed(localeMethods.dateToLocaleString, 'toLocaleString'));
  install(Date.prototype, 'toLocaleDateString', renamed(localeMethods.dateToLocaleDateString, 'toLocaleDateString'));
  install(Date.prototype, 'toLocaleTimeString', renamed(localeMethods.dateToLocaleTimeString, 'toLocaleTimeString'));
  install(String.prototype, 'localeCompare', localeMethods.localeCompare);
  install(Array.prototype, 'toLocaleString', renamed(localeMethods.arrayToLocaleString, 'toLocaleString'));
});
