// Writes guest-js/src/builtins/intl/unit_data.rs: CLDR's unit patterns (for
// `Intl.NumberFormat`'s unit style and `Intl.DurationFormat`), time separators (for
// DurationFormat's digital style), the NaN symbol, number range and approximately patterns and the date
// range fallback pattern (for `formatRange`), for the locale families the ICU4X data ships.
//
// ICU4X's own unit data covers five unit categories (no digital units, temperatures,
// angles, percent or speeds), so these come from CLDR's JSON release of the same version
// ICU4X 2.4 is built on, pinned in package-lock.json. Run through scripts/export-intl-data.
//
// What is kept, per locale: for each unit ECMA-402 sanctions (and each `a-per-b` CLDR
// names), in each width, the pattern of every plural category that differs from `other`,
// and the `perUnitPattern`; per width, the `compoundUnitPattern`; the time separator; the
// NaN symbol (ICU4X's decimal symbols have none); the number range and approximately patterns; the Gregorian interval fallback pattern.
// Only what the lookup would not already find is written: a narrow record equal to the
// short one, a short equal to the long one, or a regional locale's record equal to its
// parent's is left out. The guest's lookup (units.rs) walks the same chain.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const out = process.argv[2] ?? join(root, 'guest-js/src/builtins/intl/unit_data.rs');

// The locale families are the ICU4X generator's: one list, read from its source.
const mainRs = readFileSync(join(here, '..', 'src', 'main.rs'), 'utf8');
const familyList = /const LOCALE_FAMILIES: &\[&str\] = &\[([^\]]*)\]/.exec(mainRs);
if (!familyList) throw new Error('LOCALE_FAMILIES not found in scripts/intl-data/src/main.rs');
const families = [...familyList[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]).filter((f) => !f.startsWith('@'));
// CLDR files Norwegian Bokmål under `no`, which ICU4X also ships.
if (families.includes('nb') && !families.includes('no')) families.push('no');

const sanctioned = new Set(['acre', 'bit', 'byte', 'celsius', 'centimeter', 'day', 'degree', 'fahrenheit', 'fluid-ounce',
  'foot', 'gallon', 'gigabit', 'gigabyte', 'gram', 'hectare', 'hour', 'inch', 'kilobit', 'kilobyte', 'kilogram',
  'kilometer', 'liter', 'megabit', 'megabyte', 'meter', 'microsecond', 'mile', 'mile-scandinavian', 'milliliter',
  'millimeter', 'millisecond', 'minute', 'month', 'nanosecond', 'ounce', 'percent', 'petabyte', 'pound', 'second',
  'stone', 'terabit', 'terabyte', 'week', 'yard', 'year']);
const wanted = (unit) => {
  if (sanctioned.has(unit)) return true;
  const [numerator, denominator, ...rest] = unit.split('-per-');
  return rest.length === 0 && denominator !== undefined && sanctioned.has(numerator) && sanctioned.has(denominator);
};
const widths = ['long', 'short', 'narrow'];
const categories = ['zero', 'one', 'two', 'few', 'many'];

const unitsDir = join(here, 'node_modules/cldr-units-full/main');
const numbersDir = join(here, 'node_modules/cldr-numbers-full/main');
const datesDir = join(here, 'node_modules/cldr-dates-full/main');
const locales = readdirSync(unitsDir).filter((name) => families.some((f) => name === f || name.startsWith(`${f}-`)));

// Each locale's records, resolved (CLDR's JSON repeats what a locale inherits):
// `unit|width` -> a record string, `*|width` -> the compound pattern, and the keys of one
// value (`:`, `nan`, `-`, `~`, `@`).
function resolved(locale) {
  const units = JSON.parse(readFileSync(join(unitsDir, locale, 'units.json'), 'utf8')).main[locale].units;
  const records = new Map();
  for (const width of widths) {
    for (const [key, value] of Object.entries(units[width])) {
      if (key === 'per') {
        records.set(`*|${width}`, value.compoundUnitPattern);
        continue;
      }
      const unit = key.slice(key.indexOf('-') + 1);
      if (!wanted(unit) || value['unitPattern-count-other'] === undefined) continue;
      const other = value['unitPattern-count-other'];
      const fields = [`other=${other}`];
      for (const category of categories) {
        const pattern = value[`unitPattern-count-${category}`];
        if (pattern !== undefined && pattern !== other) fields.push(`${category}=${pattern}`);
      }
      if (value.perUnitPattern !== undefined) fields.push(`per=${value.perUnitPattern}`);
      records.set(`${unit}|${width}`, fields.join('\u001f'));
    }
  }
  const numbers = JSON.parse(readFileSync(join(numbersDir, locale, 'numbers.json'), 'utf8')).main[locale].numbers;
  const system = numbers.defaultNumberingSystem;
  const symbols = numbers[`symbols-numberSystem-${system}`] ?? numbers['symbols-numberSystem-latn'];
  records.set(':', symbols.timeSeparator ?? ':');
  records.set('nan', symbols.nan);
  const misc = numbers[`miscPatterns-numberSystem-${system}`] ?? numbers['miscPatterns-numberSystem-latn'];
  records.set('-', misc.range);
  records.set('~', misc.approximately);
  const dates = JSON.parse(readFileSync(join(datesDir, locale, 'ca-gregorian.json'), 'utf8')).main[locale].dates;
  records.set('@', dates.calendars.gregorian.dateTimeFormats.intervalFormats.intervalFormatFallback);
  return records;
}

// CLDR's parents: a regional English inherits from `en-001`, `zh-Hant` from root. The
// guest starts at the most specific of the maximized tag, language-script,
// language-region and language that this file has, then follows each locale's parent:
// the `^` line when there is one (root ends the chain), else the tag less its last subtag.
const parents = JSON.parse(readFileSync(join(here, 'node_modules/cldr-core/supplemental/parentLocales.json'), 'utf8'))
  .supplemental.parentLocales.parentLocale;
const truncated = (tag) => (tag.includes('-') ? tag.slice(0, tag.lastIndexOf('-')) : 'root');
const parentOf = (tag) => parents[tag] ?? truncated(tag);
function chainOf(tag) {
  const chain = [];
  for (let at = tag; at !== 'root'; at = parentOf(at)) chain.push(at);
  return chain;
}

const kept = new Map();
function lookup(chain, key) {
  for (const locale of chain) {
    const value = kept.get(locale)?.get(key);
    if (value !== undefined) return value;
  }
  const [unit, width] = key.split('|');
  const wider = widths[widths.indexOf(width) - 1];
  return width !== undefined && wider !== undefined ? lookup(chain, `${unit}|${wider}`) : undefined;
}

// Parents first, so a locale is compared with what its chain already keeps.
const ordered = [...locales].sort((a, b) => chainOf(a).length - chainOf(b).length || (a < b ? -1 : 1));
for (const locale of ordered) {
  const chain = chainOf(locale);
  const mine = new Map();
  kept.set(locale, mine);
  const records = resolved(locale);
  // Widths in order, so a narrow record is compared with the short one already kept.
  const keys = [...records.keys()].sort((a, b) => widths.indexOf(a.split('|')[1]) - widths.indexOf(b.split('|')[1]));
  for (const key of keys) {
    if (lookup(chain, key) !== records.get(key)) mine.set(key, records.get(key));
  }
  const explicitParent = parentOf(locale) !== truncated(locale);
  if (explicitParent) mine.set('^', parentOf(locale));
  else if (mine.size === 0 && locale.includes('-')) kept.delete(locale);
}
// A locale the chain cannot reach from its own tag would be found under another name.
for (const locale of kept.keys()) {
  const full = new Intl.Locale(locale).maximize();
  const tried = [`${full.language}-${full.script}-${full.region}`, `${full.language}-${full.script}`, `${full.language}-${full.region}`, full.language];
  if (tried.find((name) => kept.has(name)) !== locale) throw new Error(`${locale} is not the first of ${tried} kept`);
}

const rust = (text) => JSON.stringify(text).replace(/\\u001f/g, '\\u{1f}').replace(/\\u([0-9a-f]{4})/g, '\\u{$1}');
let body = '';
for (const [locale, records] of [...kept].sort(([a], [b]) => (a < b ? -1 : 1))) {
  const lines = [...records].map(([key, value]) => `${key}\t${value}`).join('\n');
  body += `    (${rust(locale)}, ${rust(lines)}),\n`;
}
const source = `//! CLDR 48.2's unit patterns, time separators, NaN symbols and range patterns for
//! the shipped locales, written by scripts/export-intl-data (from
//! scripts/intl-data/units/generate.mjs); do not edit. The data is the Unicode
//! Consortium's, under the licence in data/LICENSE.
//!
//! One entry per locale: lines of \`key\\tvalue\`. Keys are \`unit|width\` (a record:
//! \`category=pattern\` fields, \`per=\` the per-unit pattern, joined by U+001F),
//! \`*|width\` (the compound \`{0} per {1}\` pattern), \`:\` (the time separator),
//! \`nan\` (the NaN symbol), \`-\` and \`~\` (the number range and approximately
//! patterns), \`@\` (the date range fallback pattern) and \`^\` (the parent, when it is
//! not the tag less its last subtag; \`root\` ends the chain). A locale holds only what
//! its chain and the next wider width do not already give (see units.rs).

#[rustfmt::skip]
pub static UNIT_DATA: &[(&str, &str)] = &[
${body}];
`;
writeFileSync(out, source);
console.log(`wrote ${out}: ${kept.size} locales, ${source.length} bytes`);
