//! ECMA-402's `Intl`, and the locale-taking methods of `Number`, `BigInt`, `Date`,
//! `String` and `Array` routed through it, on ICU4X.
//!
//! The split is the web globals' ([`crate::web`]): the script half (`intl.js`) reads and
//! checks options in the standard's order, resolves locales, and builds every object a
//! script sees; this native half holds ICU4X's formatters and does the locale-dependent
//! work. A formatter lives in a table for the rest of the run and the script half keeps
//! its index; the script half reuses one for equal options, and the table has a bound
//! ([`MAX_FORMATTERS`]), since what it holds is not on the script's heap.
//!
//! Locale data is baked into the artefact for the locales in [`SHIPPED_LANGUAGES`]
//! (`data/`, made by `scripts/export-intl-data`). A script asking for another locale gets
//! the standard's fallback: the default locale, `en-US`.

use std::cell::RefCell;

use fixed_decimal::Decimal;
use icu::collator::options::{AlternateHandling, CaseLevel, CollatorOptions, Strength};
use icu::collator::{Collator, CollatorPreferences};
use icu::decimal::options::GroupingStrategy;
use icu::list::ListFormatter;
use icu::list::options::{ListFormatterOptions, ListLength};
use icu::locale::{Locale, LocaleCanonicalizer, LocaleDirectionality, LocaleExpander};
use icu::plurals::{PluralCategory, PluralOperands, PluralRuleType, PluralRulesOptions, PluralRulesWithRanges};
use icu::segmenter::options::{SentenceBreakOptions, WordBreakOptions};
use icu::segmenter::{GraphemeClusterSegmenter, SentenceSegmenter, WordSegmenter};
use icu_experimental::relativetime::RelativeTimeFormatter;
use icu_experimental::relativetime::options::{Numeric, RelativeTimeFormatterOptions};
use rquickjs::function::Func;
use rquickjs::{Ctx, Exception, Object, Value};

mod datetime;
mod number;
mod parts;
mod unit_data;
mod units;

use number::{CurrencyDisplay, Notation, NumberFormat, NumberSpec, Rounding, RoundingKind, Style};
use parts::{Parts, parts_of};
use units::UnitWidth;

/// The script half, run once after the web globals with the native object.
pub const SCRIPT: &str = include_str!("intl.js");

/// The locale data baked into the artefact (`data/`), which every constructor reads.
pub struct Baked;

// The generated module defines a macro per data marker, and one that applies them all.
#[macro_use]
#[allow(clippy::all)]
mod data;

// The generated data: entries some constructors never read, and unsafe blocks (each
// reads bytes the exporter wrote as valid for their type) that it does not document.
#[allow(dead_code, clippy::undocumented_unsafe_blocks)]
const _: () = {
    use data::*;
    impl_data_provider!(Baked);
};

const DATA: &Baked = &Baked;

/// The languages whose data the artefact carries (each with its regional forms): the
/// locale families `scripts/export-intl-data` exports, and `no`, the Norwegian whose data
/// is Bokmål's. Any other falls back to the default locale.
pub const SHIPPED_LANGUAGES: [&str; 29] = [
    "ar", "cs", "da", "de", "el", "en", "es", "fi", "fr", "he", "hi", "hu", "id", "it", "ja", "ko", "nb", "nl", "pl", "pt", "ro",
    "ru", "sv", "th", "tr", "uk", "vi", "zh", "no",
];

/// Formatters of each kind one run may hold (number and the like in one table, date-time
/// formats in another). Equal options share one, so only a script that asks for this many
/// different formats reaches it; past it, a constructor throws a `RangeError`.
pub const MAX_FORMATTERS: usize = 4096;

/// UTF-16 units of text one `Intl.Segmenter` splits: its boundaries are found at once, in
/// memory the script's heap limit does not see.
pub const MAX_SEGMENT_CHARS: usize = 1 << 20;

enum Formatter {
    Number(Box<NumberFormat>),
    Plural(Box<PluralRulesWithRanges<icu::plurals::PluralRules>>, Rounding),
    Collator(Box<Collator>),
    List(Box<ListFormatter>),
    /// One relative-time formatter per unit, made when the unit is first asked for.
    Relative(Locale, RelativeStyle, bool, Box<[Option<RelativeTimeFormatter>; 8]>),
}

#[derive(Clone, Copy)]
enum RelativeStyle {
    Long,
    Short,
    Narrow,
}

thread_local! {
    static FORMATTERS: RefCell<Vec<Formatter>> = const { RefCell::new(Vec::new()) };
    /// The host's time zone as this run was given it; checked when a script first needs it.
    static DEFAULT_TIME_ZONE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Sets the run's default time zone, the host's (an IANA name). A name the time zone
/// database does not know is taken as `UTC` when a script first asks for the default.
pub fn set_default_time_zone(name: &str) {
    DEFAULT_TIME_ZONE.with(|zone| {
        let mut zone = zone.borrow_mut();
        zone.clear();
        zone.push_str(name);
    });
}

/// Adds `Intl`'s native functions to `intl`.
pub fn natives<'js>(ctx: &Ctx<'js>, intl: &Object<'js>) -> rquickjs::Result<()> {
    intl.set(
        "canonicalizeLocale",
        Func::from(|ctx: Ctx<'js>, tag: String| {
            canonical_locale(&tag).map(|l| l.to_string()).ok_or_else(|| incorrect_locale(&ctx, &tag))
        }),
    )?;
    intl.set(
        "maximize",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<String> {
            let mut locale = canonical_locale(&tag).ok_or_else(|| incorrect_locale(&ctx, &tag))?;
            LocaleExpander::try_new_extended_unstable(DATA).map_err(|e| data_error(&ctx, e))?.maximize(&mut locale.id);
            Ok(locale.to_string())
        }),
    )?;
    intl.set(
        "minimize",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<String> {
            let mut locale = canonical_locale(&tag).ok_or_else(|| incorrect_locale(&ctx, &tag))?;
            LocaleExpander::try_new_extended_unstable(DATA).map_err(|e| data_error(&ctx, e))?.minimize(&mut locale.id);
            Ok(locale.to_string())
        }),
    )?;
    intl.set("shippedLanguages", SHIPPED_LANGUAGES.to_vec())?;
    intl.set(
        "defaultTimeZone",
        Func::from(|| -> String {
            let given = DEFAULT_TIME_ZONE.with(|zone| zone.borrow().clone());
            datetime::canonical_time_zone(&given).unwrap_or_else(|| "UTC".into())
        }),
    )?;
    intl.set(
        "rangePatterns",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<DefinedArray<&'static str>> {
            Ok(DefinedArray(units::range_patterns(&locale_of(&ctx, &tag)?).to_vec()))
        }),
    )?;
    intl.set(
        "timeSeparator",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<String> {
            Ok(units::time_separator(&locale_of(&ctx, &tag)?).to_owned())
        }),
    )?;
    intl.set(
        "defaultNumberingSystem",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<String> {
            let locale = locale_of(&ctx, &tag)?;
            default_numbering_system(&locale).map_err(|e| data_error(&ctx, e))
        }),
    )?;
    intl.set(
        "isRightToLeft",
        Func::from(|ctx: Ctx<'js>, tag: String| -> rquickjs::Result<bool> {
            let locale = locale_of(&ctx, &tag)?;
            let directionality = LocaleDirectionality::try_new_extended_unstable(DATA).map_err(|e| data_error(&ctx, e))?;
            Ok(directionality.is_right_to_left(&locale.id))
        }),
    )?;
    intl.set(
        "numberFormatNew",
        Func::from(|ctx: Ctx<'js>, tag: String, spec: Object<'js>| -> rquickjs::Result<u32> {
            let locale = locale_of(&ctx, &tag)?;
            let spec = number_spec(&ctx, &spec)?;
            let format = NumberFormat::new(&locale, spec).map_err(|e| Exception::throw_range(&ctx, &e))?;
            add(&ctx, Formatter::Number(Box::new(format)))
        }),
    )?;
    intl.set(
        "numberFormat",
        Func::from(|ctx: Ctx<'js>, handle: u32, value: Value<'js>| -> rquickjs::Result<DefinedArray<String>> {
            with_formatter(&ctx, handle, |formatter| match formatter {
                Formatter::Number(format) => Ok(flat(format_value(&ctx, format, &value)?)),
                _ => Err(wrong_handle(&ctx)),
            })
        }),
    )?;
    intl.set(
        "pluralRulesNew",
        Func::from(|ctx: Ctx<'js>, tag: String, ordinal: bool, spec: Object<'js>| -> rquickjs::Result<u32> {
            let locale = locale_of(&ctx, &tag)?;
            let rounding = rounding_of(&ctx, &spec)?;
            let mut options = PluralRulesOptions::default();
            options.rule_type = Some(if ordinal { PluralRuleType::Ordinal } else { PluralRuleType::Cardinal });
            let rules =
                PluralRulesWithRanges::try_new_unstable(DATA, (&locale).into(), options).map_err(|e| data_error(&ctx, e))?;
            add(&ctx, Formatter::Plural(Box::new(rules), rounding))
        }),
    )?;
    intl.set(
        "pluralSelect",
        Func::from(|ctx: Ctx<'js>, handle: u32, value: Value<'js>, end: Value<'js>| -> rquickjs::Result<&'static str> {
            with_formatter(&ctx, handle, |formatter| match formatter {
                Formatter::Plural(rules, rounding) => {
                    let start = PluralOperands::from(&rounding.apply(&decimal_of(&ctx, &value)?));
                    if end.is_undefined() {
                        return Ok(category_name(rules.rules().category_for(start)));
                    }
                    let end = PluralOperands::from(&rounding.apply(&decimal_of(&ctx, &end)?));
                    Ok(category_name(rules.category_for_range(start, end)))
                }
                _ => Err(wrong_handle(&ctx)),
            })
        }),
    )?;
    intl.set(
        "pluralCategories",
        Func::from(|ctx: Ctx<'js>, handle: u32| -> rquickjs::Result<DefinedArray<&'static str>> {
            with_formatter(&ctx, handle, |formatter| match formatter {
                Formatter::Plural(rules, _) => {
                    // The standard's order: zero, one, two, few, many, other.
                    const ORDER: [&str; 6] = ["zero", "one", "two", "few", "many", "other"];
                    let mut names: Vec<_> = rules.rules().categories().map(category_name).collect();
                    names.sort_by_key(|name| ORDER.iter().position(|o| o == name));
                    Ok(DefinedArray(names))
                }
                _ => Err(wrong_handle(&ctx)),
            })
        }),
    )?;
    intl.set(
        "collatorNew",
        Func::from(|ctx: Ctx<'js>, tag: String, sensitivity: String, ignore_punctuation: bool| -> rquickjs::Result<u32> {
            // The locale carries the collation, numeric and case-first keywords.
            let locale = locale_of(&ctx, &tag)?;
            let mut options = CollatorOptions::default();
            let (strength, case_level) = match sensitivity.as_str() {
                "base" => (Strength::Primary, CaseLevel::Off),
                "accent" => (Strength::Secondary, CaseLevel::Off),
                "case" => (Strength::Primary, CaseLevel::On),
                _ => (Strength::Tertiary, CaseLevel::Off),
            };
            options.strength = Some(strength);
            options.case_level = Some(case_level);
            if ignore_punctuation {
                options.alternate_handling = Some(AlternateHandling::Shifted);
            }
            let prefs = CollatorPreferences::from(&locale);
            let collator = Collator::try_new_unstable(DATA, prefs, options).map_err(|e| data_error(&ctx, e))?;
            add(&ctx, Formatter::Collator(Box::new(collator)))
        }),
    )?;
    intl.set(
        "collatorCompare",
        Func::from(|ctx: Ctx<'js>, handle: u32, a: String, b: String| -> rquickjs::Result<i32> {
            with_formatter(&ctx, handle, |formatter| match formatter {
                Formatter::Collator(collator) => Ok(collator.as_borrowed().compare(&a, &b) as i32),
                _ => Err(wrong_handle(&ctx)),
            })
        }),
    )?;
    intl.set(
        "listFormatNew",
        Func::from(|ctx: Ctx<'js>, tag: String, kind: String, style: String| -> rquickjs::Result<u32> {
            let locale = locale_of(&ctx, &tag)?;
            let mut options = ListFormatterOptions::default();
            options.length = Some(match style.as_str() {
                "short" => ListLength::Short,
                "narrow" => ListLength::Narrow,
                _ => ListLength::Wide,
            });
            let prefs = (&locale).into();
            let format = match kind.as_str() {
                "disjunction" => ListFormatter::try_new_or_unstable(DATA, prefs, options),
                "unit" => ListFormatter::try_new_unit_unstable(DATA, prefs, options),
                _ => ListFormatter::try_new_and_unstable(DATA, prefs, options),
            }
            .map_err(|e| data_error(&ctx, e))?;
            add(&ctx, Formatter::List(Box::new(format)))
        }),
    )?;
    intl.set(
        "listFormat",
        Func::from(|ctx: Ctx<'js>, handle: u32, items: Vec<String>| -> rquickjs::Result<DefinedArray<String>> {
            with_formatter(&ctx, handle, |formatter| match formatter {
                Formatter::List(format) => Ok(flat(parts_of(&format.format(items.iter().map(String::as_str))))),
                _ => Err(wrong_handle(&ctx)),
            })
        }),
    )?;
    intl.set(
        "relativeTimeNew",
        Func::from(|ctx: Ctx<'js>, tag: String, style: String, always: bool| -> rquickjs::Result<u32> {
            let locale = locale_of(&ctx, &tag)?;
            let style = match style.as_str() {
                "short" => RelativeStyle::Short,
                "narrow" => RelativeStyle::Narrow,
                _ => RelativeStyle::Long,
            };
            add(&ctx, Formatter::Relative(locale, style, always, Box::default()))
        }),
    )?;
    intl.set(
        "relativeTimeFormat",
        Func::from(|ctx: Ctx<'js>, handle: u32, unit: u32, value: Value<'js>| -> rquickjs::Result<DefinedArray<String>> {
            let value = decimal_of(&ctx, &value)?;
            FORMATTERS.with(|table| {
                let mut table = table.borrow_mut();
                match table.get_mut(handle as usize) {
                    Some(Formatter::Relative(locale, style, always, units)) => {
                        let slot = units.get_mut(unit as usize).ok_or_else(|| wrong_handle(&ctx))?;
                        if slot.is_none() {
                            *slot = Some(relative_formatter(locale, *style, *always, unit).map_err(|e| data_error(&ctx, e))?);
                        }
                        let format = slot.as_ref().expect("made above");
                        Ok(flat(parts_of(&format.format(value))))
                    }
                    _ => Err(wrong_handle(&ctx)),
                }
            })
        }),
    )?;
    intl.set(
        "segment",
        Func::from(|ctx: Ctx<'js>, granularity: String, text: String| -> rquickjs::Result<DefinedArray<i32>> {
            let units: Vec<u16> = text.encode_utf16().collect();
            if units.len() > MAX_SEGMENT_CHARS {
                return Err(Exception::throw_range(&ctx, "Intl.Segmenter: the text is too long to segment"));
            }
            segment(&granularity, &units).map(DefinedArray).map_err(|e| data_error(&ctx, e))
        }),
    )?;
    intl.set(
        "displayName",
        Func::from(|ctx: Ctx<'js>, tag: String, kind: String, style: String, dialect: bool, code: String| {
            let locale = locale_of(&ctx, &tag)?;
            display_name(&locale, &kind, &style, dialect, &code).map_err(|e| data_error(&ctx, e))
        }),
    )?;
    datetime::natives(ctx, intl)?;
    Ok(())
}

/// The tags a table keyed by CLDR locale is searched with for `id`, most specific first:
/// language-script-region, language-script, language-region, language (so `en-Shaw-GB`
/// finds `en-Shaw` before `en-GB`, as CLDR's inheritance has it).
fn lookup_tags(id: &icu::locale::LanguageIdentifier) -> Vec<String> {
    let language = id.language.as_str();
    let (script, region) = (id.script.map(|s| s.to_string()), id.region.map(|r| r.to_string()));
    let mut tags = Vec::with_capacity(4);
    if let (Some(script), Some(region)) = (&script, &region) {
        tags.push(format!("{language}-{script}-{region}"));
    }
    if let Some(script) = &script {
        tags.push(format!("{language}-{script}"));
    }
    if let Some(region) = &region {
        tags.push(format!("{language}-{region}"));
    }
    tags.push(language.to_string());
    tags
}

/// The numbering system a locale's numbers use unless it asks for another.
fn default_numbering_system(locale: &Locale) -> Result<String, icu_provider::DataError> {
    use icu::decimal::provider::DecimalSymbolsV1;
    use icu_provider::prelude::*;
    let data_locale = DataLocale::from(locale);
    let request = DataRequest { id: DataIdentifierBorrowed::for_locale(&data_locale), ..Default::default() };
    let response: DataResponse<DecimalSymbolsV1> = DATA.load(request)?;
    Ok(response.payload.get().numsys().to_owned())
}

/// The name of `code` (a language tag, region or script, well-formed and in canonical
/// case) in `locale`, or `None` when the data has none.
fn display_name(
    locale: &Locale,
    kind: &str,
    style: &str,
    dialect: bool,
    code: &str,
) -> Result<Option<String>, icu_provider::DataError> {
    use icu::locale::subtags::{Region, Script};
    use icu_experimental::displaynames::multi::{LocaleDisplayNamesFormatter, RegionDisplayNames, ScriptDisplayNames};
    use icu_experimental::displaynames::{DisplayNamesOptions, Fallback, LanguageDisplay, Style as NameStyle};
    let mut options = DisplayNamesOptions::default();
    options.style = Some(match style {
        "narrow" => NameStyle::Narrow,
        "short" => NameStyle::Short,
        _ => NameStyle::Long,
    });
    options.fallback = Fallback::None;
    options.language_display = if dialect { LanguageDisplay::Dialect } else { LanguageDisplay::Standard };
    let prefs = locale.into();
    Ok(match kind {
        "region" => match Region::try_from_str(code) {
            Ok(region) => RegionDisplayNames::try_new_unstable(DATA, prefs, options)?.of(region).map(str::to_owned),
            Err(_) => None,
        },
        "script" => match Script::try_from_str(code) {
            Ok(script) => ScriptDisplayNames::try_new_unstable(DATA, prefs, options)?.of(script).map(str::to_owned),
            Err(_) => None,
        },
        "language" => match Locale::try_from_str(code) {
            Ok(language) => {
                let name = LocaleDisplayNamesFormatter::try_new_unstable(DATA, prefs, options)?.of(&language).into_owned();
                // With no name for its language, the formatter gives the code back.
                (name != code).then_some(name)
            }
            Err(_) => None,
        },
        _ => None,
    })
}

/// `tag` parsed and canonicalized (aliases replaced, case and order fixed), or `None`
/// when it is not a well-formed language tag.
fn canonical_locale(tag: &str) -> Option<Locale> {
    // ECMA-402 takes only Unicode BCP 47 locale identifiers: no legacy underscores.
    if tag.contains('_') || tag.is_empty() {
        return None;
    }
    let mut locale = Locale::try_from_str(tag).ok()?;
    if let Ok(canonicalizer) = LocaleCanonicalizer::try_new_extended_unstable(DATA) {
        canonicalizer.canonicalize(&mut locale);
    }
    Some(locale)
}

fn locale_of<'js>(ctx: &Ctx<'js>, tag: &str) -> rquickjs::Result<Locale> {
    Locale::try_from_str(tag).map_err(|_| incorrect_locale(ctx, tag))
}

fn incorrect_locale(ctx: &Ctx<'_>, tag: &str) -> rquickjs::Error {
    Exception::throw_range(ctx, &format!("Incorrect locale information provided: {tag}"))
}

fn data_error(ctx: &Ctx<'_>, error: icu_provider::DataError) -> rquickjs::Error {
    Exception::throw_range(ctx, &format!("Intl: the locale data has no entry for this request ({error})"))
}

fn wrong_handle(ctx: &Ctx<'_>) -> rquickjs::Error {
    Exception::throw_type(ctx, "Intl: the formatter is not of this kind")
}

fn add(ctx: &Ctx<'_>, formatter: Formatter) -> rquickjs::Result<u32> {
    FORMATTERS.with(|table| {
        let mut table = table.borrow_mut();
        if table.len() >= MAX_FORMATTERS {
            return Err(Exception::throw_range(
                ctx,
                &format!("Intl: a script may make at most {MAX_FORMATTERS} formatters with different options"),
            ));
        }
        table.push(formatter);
        Ok((table.len() - 1) as u32)
    })
}

fn with_formatter<'js, R>(ctx: &Ctx<'js>, handle: u32, f: impl FnOnce(&Formatter) -> rquickjs::Result<R>) -> rquickjs::Result<R> {
    FORMATTERS.with(|table| match table.borrow().get(handle as usize) {
        Some(formatter) => f(formatter),
        None => Err(wrong_handle(ctx)),
    })
}

/// Parts as the script half reads them: type, text, type, text, ...
fn flat(parts: Parts) -> DefinedArray<String> {
    let mut out = Vec::with_capacity(parts.len() * 2);
    for part in parts {
        out.push(part.kind.to_owned());
        out.push(part.text);
    }
    DefinedArray(out)
}

/// A list handed to the script half as an array whose elements are defined, not set, as
/// the standard makes its lists: a setter a script put on `Array.prototype` never runs.
pub struct DefinedArray<T>(pub Vec<T>);

impl<T> FromIterator<T> for DefinedArray<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        DefinedArray(items.into_iter().collect())
    }
}

impl<'js, T: rquickjs::IntoJs<'js>> rquickjs::IntoJs<'js> for DefinedArray<T> {
    fn into_js(self, ctx: &Ctx<'js>) -> rquickjs::Result<Value<'js>> {
        use rquickjs::object::Property;
        let array = rquickjs::Array::new(ctx.clone())?;
        for (index, item) in self.0.into_iter().enumerate() {
            let index = u32::try_from(index).map_err(|_| Exception::throw_range(ctx, "Intl: a list too long"))?;
            array.as_object().prop(index, Property::from(item).writable().enumerable().configurable())?;
        }
        Ok(array.into_value())
    }
}

/// A value the script half passes to be formatted: a finite number, or the decimal text
/// of a BigInt or of an exact string numeric literal.
fn decimal_of<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> rquickjs::Result<Decimal> {
    let decimal = if let Some(x) = value.as_number() {
        number::decimal_of_number(x)
    } else if let Some(text) = value.as_string() {
        number::decimal_of_text(&text.to_string()?)
    } else {
        None
    };
    decimal.ok_or_else(|| Exception::throw_range(ctx, "Intl: the number is out of the range that can be formatted"))
}

/// `value` formatted: NaN and the infinities by their symbols, the rest by its digits.
fn format_value<'js>(ctx: &Ctx<'js>, format: &NumberFormat, value: &Value<'js>) -> rquickjs::Result<Parts> {
    if let Some(x) = value.as_number() {
        if x.is_nan() {
            return Ok(format.format_special("nan", format.nan, false));
        }
        if x.is_infinite() {
            return Ok(format.format_special("infinity", "∞", x < 0.0));
        }
    }
    Ok(format.format(&decimal_of(ctx, value)?))
}

/// Reads the resolved options of a number format the script half passes.
fn number_spec<'js>(ctx: &Ctx<'js>, spec: &Object<'js>) -> rquickjs::Result<NumberSpec> {
    let text = |key: &str| -> rquickjs::Result<String> { spec.get::<_, Option<String>>(key).map(Option::unwrap_or_default) };
    let style = match text("style")?.as_str() {
        "percent" => Style::Percent,
        "currency" => {
            let code = text("currency")?;
            let code = icu::locale::preferences::extensions::unicode::keywords::CurrencyType::try_from_str(&code)
                .map_err(|_| Exception::throw_range(ctx, &format!("Invalid currency code : {code}")))?;
            let display = match text("currencyDisplay")?.as_str() {
                "narrowSymbol" => CurrencyDisplay::NarrowSymbol,
                "code" => CurrencyDisplay::Code,
                _ => CurrencyDisplay::Symbol,
            };
            Style::Currency { code, display, accounting: text("currencySign")? == "accounting" }
        }
        "unit" => Style::Unit {
            unit: text("unit")?,
            width: match text("unitDisplay")?.as_str() {
                "long" => UnitWidth::Long,
                "narrow" => UnitWidth::Narrow,
                _ => UnitWidth::Short,
            },
        },
        _ => Style::Decimal,
    };
    let notation = match (text("notation")?.as_str(), text("compactDisplay")?.as_str()) {
        ("scientific", _) => Notation::Scientific,
        ("engineering", _) => Notation::Engineering,
        ("compact", "long") => Notation::CompactLong,
        ("compact", _) => Notation::CompactShort,
        _ => Notation::Standard,
    };
    let grouping = match spec.get::<_, Value>("useGrouping")?.as_string() {
        Some(name) => match name.to_string()?.as_str() {
            "always" => Some(GroupingStrategy::Always),
            "min2" => Some(GroupingStrategy::Min2),
            _ => Some(GroupingStrategy::Auto),
        },
        None => None,
    };
    Ok(NumberSpec {
        style,
        notation,
        sign_display: number::sign_display(&text("signDisplay")?).unwrap_or_default(),
        grouping,
        rounding: rounding_of(ctx, spec)?,
    })
}

/// Reads ECMA-402's digit options, resolved by the script half.
fn rounding_of<'js>(ctx: &Ctx<'js>, spec: &Object<'js>) -> rquickjs::Result<Rounding> {
    let int = |key: &str| -> rquickjs::Result<i16> { Ok(spec.get::<_, Option<i32>>(key)?.unwrap_or(0).clamp(0, 100) as i16) };
    let text = |key: &str| -> rquickjs::Result<String> { spec.get::<_, Option<String>>(key).map(Option::unwrap_or_default) };
    let kind = match text("roundingType")?.as_str() {
        "significantDigits" => RoundingKind::Significant,
        "morePrecision" => RoundingKind::MorePrecision,
        "lessPrecision" => RoundingKind::LessPrecision,
        _ => RoundingKind::Fraction,
    };
    let mode = number::rounding_mode(&text("roundingMode")?)
        .ok_or_else(|| Exception::throw_range(ctx, "Intl: unknown rounding mode"))?;
    Ok(Rounding {
        minimum_integer: int("minimumIntegerDigits")?.max(1),
        minimum_fraction: int("minimumFractionDigits")?,
        maximum_fraction: int("maximumFractionDigits")?,
        minimum_significant: int("minimumSignificantDigits")?.max(1),
        maximum_significant: int("maximumSignificantDigits")?.max(1),
        kind,
        mode,
        increment: spec.get::<_, Option<u16>>("roundingIncrement")?.unwrap_or(1),
        strip_if_integer: text("trailingZeroDisplay")? == "stripIfInteger",
    })
}

fn category_name(category: PluralCategory) -> &'static str {
    match category {
        PluralCategory::Zero => "zero",
        PluralCategory::One => "one",
        PluralCategory::Two => "two",
        PluralCategory::Few => "few",
        PluralCategory::Many => "many",
        PluralCategory::Other => "other",
    }
}

/// The formatter of relative times in `unit` (second, minute, hour, day, week, month,
/// quarter, year: 0 to 7).
fn relative_formatter(
    locale: &Locale,
    style: RelativeStyle,
    always: bool,
    unit: u32,
) -> Result<RelativeTimeFormatter, icu_provider::DataError> {
    type Make = fn(
        &Baked,
        icu_experimental::relativetime::RelativeTimeFormatterPreferences,
        RelativeTimeFormatterOptions,
    ) -> Result<RelativeTimeFormatter, icu_provider::DataError>;
    const LONG: [Make; 8] = [
        RelativeTimeFormatter::try_new_long_second_unstable,
        RelativeTimeFormatter::try_new_long_minute_unstable,
        RelativeTimeFormatter::try_new_long_hour_unstable,
        RelativeTimeFormatter::try_new_long_day_unstable,
        RelativeTimeFormatter::try_new_long_week_unstable,
        RelativeTimeFormatter::try_new_long_month_unstable,
        RelativeTimeFormatter::try_new_long_quarter_unstable,
        RelativeTimeFormatter::try_new_long_year_unstable,
    ];
    const SHORT: [Make; 8] = [
        RelativeTimeFormatter::try_new_short_second_unstable,
        RelativeTimeFormatter::try_new_short_minute_unstable,
        RelativeTimeFormatter::try_new_short_hour_unstable,
        RelativeTimeFormatter::try_new_short_day_unstable,
        RelativeTimeFormatter::try_new_short_week_unstable,
        RelativeTimeFormatter::try_new_short_month_unstable,
        RelativeTimeFormatter::try_new_short_quarter_unstable,
        RelativeTimeFormatter::try_new_short_year_unstable,
    ];
    const NARROW: [Make; 8] = [
        RelativeTimeFormatter::try_new_narrow_second_unstable,
        RelativeTimeFormatter::try_new_narrow_minute_unstable,
        RelativeTimeFormatter::try_new_narrow_hour_unstable,
        RelativeTimeFormatter::try_new_narrow_day_unstable,
        RelativeTimeFormatter::try_new_narrow_week_unstable,
        RelativeTimeFormatter::try_new_narrow_month_unstable,
        RelativeTimeFormatter::try_new_narrow_quarter_unstable,
        RelativeTimeFormatter::try_new_narrow_year_unstable,
    ];
    let table = match style {
        RelativeStyle::Long => &LONG,
        RelativeStyle::Short => &SHORT,
        RelativeStyle::Narrow => &NARROW,
    };
    let mut options = RelativeTimeFormatterOptions::default();
    options.numeric = Some(if always { Numeric::Always } else { Numeric::Auto });
    table[unit as usize % 8](DATA, locale.into(), options)
}

/// The boundaries of `text` in UTF-16 units, each followed by whether the segment before it
/// is word-like (1), not (0), or the granularity does not say (-1).
fn segment(granularity: &str, text: &[u16]) -> Result<Vec<i32>, icu_provider::DataError> {
    let mut out = Vec::new();
    match granularity {
        "word" => {
            let segmenter = WordSegmenter::try_new_for_non_complex_scripts_unstable(DATA, WordBreakOptions::default())?;
            let mut breaks = segmenter.as_borrowed().segment_utf16(text);
            while let Some(index) = breaks.next() {
                out.push(index as i32);
                out.push(i32::from(breaks.is_word_like()));
            }
        }
        "sentence" => {
            let segmenter = SentenceSegmenter::try_new_unstable(DATA, SentenceBreakOptions::default())?;
            for index in segmenter.as_borrowed().segment_utf16(text) {
                out.push(index as i32);
                out.push(-1);
            }
        }
        _ => {
            let segmenter = GraphemeClusterSegmenter::try_new_unstable(DATA)?;
            for index in segmenter.as_borrowed().segment_utf16(text) {
                out.push(index as i32);
                out.push(-1);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list here and the generator's are one decision: a language shipped without
    /// data would format as the root locale, one exported and not listed would never be used.
    #[test]
    fn shipped_languages_are_the_exported_families() {
        let generator = include_str!("../../../../scripts/intl-data/src/main.rs");
        let start = generator.find("const LOCALE_FAMILIES").expect("the generator lists its locale families");
        let list = &generator[start..];
        let list = &list[list.find("= &[").unwrap() + 4..list.find("];").unwrap()];
        let mut exported: Vec<&str> =
            list.split(',').map(|f| f.trim().trim_matches('"')).filter(|f| !f.is_empty() && *f != "@und").collect();
        exported.push("no");
        exported.sort_unstable();
        let mut shipped = SHIPPED_LANGUAGES.to_vec();
        shipped.sort_unstable();
        assert_eq!(shipped, exported);
    }
}
