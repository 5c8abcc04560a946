//! `Intl.NumberFormat`'s native half: ECMA-402's rounding (FormatNumericToString) on an
//! exact decimal, and the formatting of the rounded digits through ICU4X. The script half
//! reads and checks the options; this half gets them resolved, as a [`NumberSpec`].
//!
//! ICU4X formats the digits (numbering system, separators, grouping) and the compact
//! forms; the affixes of a percent or a currency (`%`, `$`, `€`, `US dollars`) come from
//! ICU4X's formatters of those, read once per formatter from the form of `1` and `-1`, so
//! the sign, the affixes and the digits can be put together under the script's own
//! rounding and sign display, and every piece keeps its `formatToParts` type.

use fixed_decimal::{Decimal, FloatPrecision, RoundingIncrement, Sign, SignDisplay, SignedRoundingMode, UnsignedRoundingMode};
use icu::decimal::options::{DecimalFormatterOptions, GroupingStrategy};
use icu::decimal::{CompactDecimalFormatter, DecimalFormatter};
use icu::locale::Locale;
use icu::locale::preferences::extensions::unicode::keywords::CurrencyType;
use icu_experimental::dimension::currency::formatter::CurrencyFormatter;
use icu_experimental::dimension::percent::formatter::PercentFormatter;

use super::DATA;
use super::parts::{Part, Parts, parts_of};
use super::units::{UnitPatterns, UnitWidth};

/// The options of one formatter, as the script half resolved them.
pub struct NumberSpec {
    pub style: Style,
    pub notation: Notation,
    pub sign_display: SignDisplay,
    pub grouping: Option<GroupingStrategy>,
    pub rounding: Rounding,
}

pub enum Style {
    Decimal,
    Percent,
    /// A currency by its ISO 4217 code, shown as `display` says.
    Currency {
        code: CurrencyType,
        display: CurrencyDisplay,
        accounting: bool,
    },
    /// A unit ECMA-402 sanctions (or `a-per-b` of two), written as CLDR's pattern for
    /// the width and the number's plural category says.
    Unit {
        unit: String,
        width: UnitWidth,
    },
}

#[derive(Clone, Copy)]
pub enum CurrencyDisplay {
    Symbol,
    NarrowSymbol,
    Code,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Notation {
    Standard,
    Scientific,
    Engineering,
    CompactShort,
    CompactLong,
}

/// ECMA-402's digit options, already defaulted.
#[derive(Clone, Copy)]
pub struct Rounding {
    pub minimum_integer: i16,
    pub minimum_fraction: i16,
    pub maximum_fraction: i16,
    pub minimum_significant: i16,
    pub maximum_significant: i16,
    pub kind: RoundingKind,
    pub mode: SignedRoundingMode,
    /// 1, 2, 5, 10, 20, 25, 50, ... 5000, checked by the script half.
    pub increment: u16,
    /// `trailingZeroDisplay: "stripIfInteger"`.
    pub strip_if_integer: bool,
}

#[derive(Clone, Copy, PartialEq)]
pub enum RoundingKind {
    Fraction,
    Significant,
    MorePrecision,
    LessPrecision,
}

/// The rounding mode ECMA-402 names `name`.
pub fn rounding_mode(name: &str) -> Option<SignedRoundingMode> {
    use UnsignedRoundingMode as U;
    Some(match name {
        "ceil" => SignedRoundingMode::Ceil,
        "floor" => SignedRoundingMode::Floor,
        "expand" => SignedRoundingMode::Unsigned(U::Expand),
        "trunc" => SignedRoundingMode::Unsigned(U::Trunc),
        "halfCeil" => SignedRoundingMode::HalfCeil,
        "halfFloor" => SignedRoundingMode::HalfFloor,
        "halfExpand" => SignedRoundingMode::Unsigned(U::HalfExpand),
        "halfTrunc" => SignedRoundingMode::Unsigned(U::HalfTrunc),
        "halfEven" => SignedRoundingMode::Unsigned(U::HalfEven),
        _ => return None,
    })
}

/// The sign display ECMA-402 names `name`.
pub fn sign_display(name: &str) -> Option<SignDisplay> {
    Some(match name {
        "auto" => SignDisplay::Auto,
        "never" => SignDisplay::Never,
        "always" => SignDisplay::Always,
        "exceptZero" => SignDisplay::ExceptZero,
        "negative" => SignDisplay::Negative,
        _ => return None,
    })
}

impl Rounding {
    /// `x` rounded as ECMA-402's FormatNumericToString rounds it, with its trailing zeros
    /// as the minimums ask.
    pub fn apply(&self, x: &Decimal) -> Decimal {
        let mut result = match self.kind {
            RoundingKind::Fraction => self.fixed(x),
            RoundingKind::Significant => self.precision(x).0,
            RoundingKind::MorePrecision | RoundingKind::LessPrecision => {
                let (significant, magnitude) = self.precision(x);
                // ToRawFixed's rounding magnitude is -maximumFractionDigits (its increment
                // only ever applies to fraction digits alone, which these kinds refuse).
                let significant_is_finer = magnitude <= -self.maximum_fraction;
                if significant_is_finer == (self.kind == RoundingKind::MorePrecision) { significant } else { self.fixed(x) }
            }
        };
        if self.strip_if_integer && result.absolute.nonzero_magnitude_end() >= 0 {
            result.absolute.trim_end();
        }
        result.absolute.pad_start(self.minimum_integer);
        result
    }

    /// ToRawFixed: rounded to `maximum_fraction` places (or the increment), padded to
    /// `minimum_fraction`.
    fn fixed(&self, x: &Decimal) -> Decimal {
        let (increment, shift) = split_increment(self.increment);
        let mut result = x.clone();
        result.round_with_mode_and_increment(shift - self.maximum_fraction, self.mode, increment);
        result.absolute.trim_end();
        result.absolute.pad_end(-self.minimum_fraction);
        result
    }

    /// ToRawPrecision: rounded to `maximum_significant` digits, padded to
    /// `minimum_significant`; also the rounding magnitude it used.
    fn precision(&self, x: &Decimal) -> (Decimal, i16) {
        let magnitude = magnitude_of(x);
        let position = magnitude - self.maximum_significant + 1;
        let mut result = x.clone();
        result.round_with_mode(position, self.mode);
        result.absolute.trim_end();
        let start = magnitude_of(&result);
        result.absolute.pad_end(start - self.minimum_significant + 1);
        (result, position)
    }
}

/// ECMA-402's increment (1, 2, 5, 10, ..., 5000) as ICU4X's (1, 2, 5 or 25) and the power
/// of ten it is shifted by.
fn split_increment(increment: u16) -> (RoundingIncrement, i16) {
    let mut digits = increment.max(1);
    let mut shift = 0;
    while digits.is_multiple_of(10) {
        digits /= 10;
        shift += 1;
    }
    let increment = match digits {
        2 => RoundingIncrement::MultiplesOf2,
        5 => RoundingIncrement::MultiplesOf5,
        25 => {
            shift += 1;
            RoundingIncrement::MultiplesOf25
        }
        _ => RoundingIncrement::MultiplesOf1,
    };
    (increment, shift)
}

/// The pieces around a number in one locale's pattern for a style: what comes before and
/// after the digits of a positive number and of a negative one (with its sign).
struct Affixes {
    positive: (Parts, Parts),
    negative: (Parts, Parts),
    /// The locale's plus sign, put where the minus sign is for `signDisplay` "always".
    plus: String,
}

/// One `Intl.NumberFormat`'s formatters and resolved options.
pub struct NumberFormat {
    digits: DecimalFormatter,
    compact: Option<CompactDecimalFormatter>,
    /// `None` for the decimal and unit styles, which the digit formatter signs itself.
    affixes: Option<Affixes>,
    /// The locale's NaN symbol.
    pub nan: &'static str,
    /// The unit style's patterns, and the plural rules that choose among them.
    unit: Option<(UnitPatterns, icu::plurals::PluralRules)>,
    percent: bool,
    notation: Notation,
    sign_display: SignDisplay,
    rounding: Rounding,
}

impl NumberFormat {
    pub fn new(locale: &Locale, spec: NumberSpec) -> Result<NumberFormat, String> {
        let error = |e: icu_provider::DataError| format!("Intl.NumberFormat: no data for {locale}: {e}");
        let options = {
            let mut options = DecimalFormatterOptions::default();
            options.grouping_strategy = spec.grouping.or(Some(GroupingStrategy::Never));
            options
        };
        let digits = DecimalFormatter::try_new_unstable(DATA, locale.into(), options).map_err(error)?;
        let compact = match spec.notation {
            Notation::CompactShort => Some(
                CompactDecimalFormatter::try_new_short_unstable(DATA, locale.into(), compact_options(spec.grouping))
                    .map_err(error)?,
            ),
            Notation::CompactLong => Some(
                CompactDecimalFormatter::try_new_long_unstable(DATA, locale.into(), compact_options(spec.grouping))
                    .map_err(error)?,
            ),
            _ => None,
        };
        let plain = DecimalFormatter::try_new_unstable(DATA, locale.into(), Default::default()).map_err(error)?;
        let unit = match &spec.style {
            Style::Unit { unit, width } => Some((
                UnitPatterns::new(locale, unit, *width)?,
                icu::plurals::PluralRules::try_new_cardinal_unstable(DATA, locale.into()).map_err(error)?,
            )),
            _ => None,
        };
        let affixes = match spec.style {
            Style::Decimal | Style::Unit { .. } => None,
            Style::Percent => {
                let percent = PercentFormatter::try_new_unstable(DATA, locale.into(), Default::default()).map_err(error)?;
                Some(Affixes::read(&plain, "percentSign", |x| percent.format(x).to_string()))
            }
            Style::Currency { code, display, accounting } => {
                let mut options = icu_experimental::dimension::currency::options::CurrencyFormatterOptions::default();
                if accounting {
                    options.usage = icu_experimental::dimension::currency::options::CurrencyUsage::Accounting;
                }
                let prefs = locale.into();
                let currency = match display {
                    CurrencyDisplay::Symbol => CurrencyFormatter::try_new_symbol_unstable(DATA, prefs, code, options),
                    CurrencyDisplay::NarrowSymbol => {
                        CurrencyFormatter::try_new_symbol_narrow_unstable(DATA, prefs, code, options)
                    }
                    CurrencyDisplay::Code => CurrencyFormatter::try_new_code_unstable(DATA, prefs, code, options),
                }
                .map_err(error)?;
                Some(Affixes::read(&plain, "currency", |x| currency.format_fixed_decimal(x).to_string()))
            }
        };
        Ok(NumberFormat {
            digits,
            compact,
            affixes,
            nan: super::units::nan_symbol(locale),
            unit,
            percent: matches!(spec.style, Style::Percent),
            notation: spec.notation,
            sign_display: spec.sign_display,
            rounding: spec.rounding,
        })
    }

    /// `x` formatted, as typed parts.
    pub fn format(&self, x: &Decimal) -> Parts {
        let x = if self.percent { scaled(x, 2) } else { x.clone() };
        let (body, sign, shown) = match self.notation {
            Notation::Standard => {
                let rounded = self.rounding.apply(&x);
                let sign = shown_sign(&rounded, self.sign_display);
                (parts_of(&self.digits.format(&unsigned(&rounded))), sign, rounded)
            }
            Notation::Scientific | Notation::Engineering => self.scientific(&x),
            Notation::CompactShort | Notation::CompactLong => self.compacted(&x),
        };
        self.finish(body, sign, Some(&shown))
    }

    /// The digits `body` with their sign and the style's affixes or unit; `shown` is the
    /// value they show, whose plural category picks the unit's form (none: `other`).
    fn finish(&self, mut body: Parts, sign: Sign, shown: Option<&Decimal>) -> Parts {
        if let Some(affixes) = &self.affixes {
            return affixes.wrap(body, sign);
        }
        let mut out = sign_parts(&self.digits, sign);
        out.append(&mut body);
        match &self.unit {
            Some((patterns, rules)) => {
                let category = shown.map_or("other", |x| super::category_name(rules.category_for(x)));
                patterns.form(category).wrap(out)
            }
            None => out,
        }
    }

    /// NaN (`kind` "nan") or an infinity ("infinity"), which have no digits: the symbol in
    /// place of them, signed and with the style's affixes.
    pub fn format_special(&self, kind: &'static str, symbol: &str, negative: bool) -> Parts {
        // NaN has a sign only when every number shows one ("+NaN"); it is not "except zero".
        let sign = match (kind, self.sign_display) {
            ("nan", SignDisplay::Always) => Sign::Positive,
            ("nan", _) => Sign::None,
            _ => shown_sign(&Decimal::from(if negative { -1 } else { 1 }), self.sign_display),
        };
        self.finish(vec![Part::new(kind, symbol)], sign, None)
    }

    /// Scientific and engineering notation: the digits of `x` scaled into [1, 10) (or
    /// [1, 1000)), rounded, then `E` and the exponent.
    fn scientific(&self, x: &Decimal) -> (Parts, Sign, Decimal) {
        let step = if self.notation == Notation::Engineering { 3 } else { 1 };
        let mut exponent = magnitude_of(x).div_euclid(step) * step;
        let mut mantissa = self.rounding.apply(&scaled(x, -exponent));
        if magnitude_of(&mantissa) >= step {
            exponent += step;
            mantissa = self.rounding.apply(&scaled(x, -exponent));
        }
        let sign = shown_sign(&mantissa, self.sign_display);
        let mut parts = parts_of(&self.digits.format(&unsigned(&mantissa)));
        parts.push(Part::new("exponentSeparator", "E"));
        let exponent_parts = parts_of(&self.digits.format(&Decimal::from(exponent)));
        for part in exponent_parts {
            let kind = match part.kind {
                "minusSign" => "exponentMinusSign",
                "integer" | "group" => "exponentInteger",
                other => other,
            };
            parts.push(Part { kind, text: part.text });
        }
        (parts, sign, scaled(&mantissa, exponent))
    }

    /// Compact notation: ECMA-402's ComputeExponent, then ICU4X's compact pattern for it.
    fn compacted(&self, x: &Decimal) -> (Parts, Sign, Decimal) {
        let compact = self.compact.as_ref().expect("compact notation has a compact formatter");
        let magnitude = magnitude_of(x);
        let mut exponent = compact.compact_exponent_for_magnitude(magnitude);
        let mut significand = self.rounding.apply(&scaled(x, -i16::from(exponent)));
        let grown = magnitude_of(&significand) + i16::from(exponent);
        if grown > magnitude {
            let next = compact.compact_exponent_for_magnitude(grown);
            if next != exponent {
                exponent = next;
                significand = self.rounding.apply(&scaled(x, -i16::from(exponent)));
            }
        }
        let sign = shown_sign(&significand, self.sign_display);
        let unsigned = unsigned(&significand);
        let parts = match compact.format_with_exponent(&unsigned, exponent) {
            Ok(formatted) => parts_of(&formatted),
            // The exponent came from this formatter: a mismatch would be an ICU4X bug;
            // the plain digits are the honest fallback.
            Err(_) => parts_of(&self.digits.format(&unsigned)),
        };
        // The compact suffix's space is a literal, its word ("K", "million", "億") compact.
        let parts = parts
            .into_iter()
            .flat_map(|p| if p.kind == "literal" && !is_space(&p.text) { affix_parts(&p.text, "", "compact") } else { vec![p] })
            .collect();
        (parts, sign, scaled(&significand, i16::from(exponent)))
    }
}

fn compact_options(grouping: Option<GroupingStrategy>) -> icu::decimal::options::CompactDecimalFormatterOptions {
    let mut options = icu::decimal::options::CompactDecimalFormatterOptions::default();
    options.grouping_strategy = grouping.or(Some(GroupingStrategy::Never));
    options
}

/// The sign a rounded value shows under `display`: ECMA-402 decides on the rounded value
/// (so -0.001 rounded to 0 is a negative zero, which "auto" shows and "negative" hides).
fn shown_sign(rounded: &Decimal, display: SignDisplay) -> Sign {
    rounded.clone().with_sign_display(display).sign
}

/// The power of ten of `x`'s first digit (0 for zero, as ECMA-402 takes it).
fn magnitude_of(x: &Decimal) -> i16 {
    if x.absolute.is_zero() { 0 } else { x.absolute.nonzero_magnitude_start() }
}

/// `x` times ten to the `power`, without the leading zeros a shift can leave.
fn scaled(x: &Decimal, power: i16) -> Decimal {
    let mut out = x.clone();
    out.absolute.multiply_pow10(power);
    out.absolute.trim_start();
    out
}

fn unsigned(x: &Decimal) -> Decimal {
    Decimal::new(Sign::None, x.absolute.clone())
}

/// Space, the direction marks some locales put around a sign or symbol, and the
/// parentheses of accounting formats: literals.
fn is_space_char(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '(' | ')')
}

fn is_space(text: &str) -> bool {
    text.chars().all(is_space_char)
}

impl Affixes {
    /// The affixes of `format`, read from its form of 1 and of -1: what is before the
    /// first digit and after the last (the formatter may add its own fraction digits);
    /// `symbol` is the type of what is neither space nor sign.
    fn read(digits: &DecimalFormatter, symbol: &'static str, format: impl Fn(&Decimal) -> String) -> Affixes {
        let minus = sign_text(digits, Sign::Negative);
        let plus = sign_text(digits, Sign::Positive);
        let split = |text: String| -> (Parts, Parts) {
            let first = text.find(char::is_numeric);
            let last = text.rfind(char::is_numeric).map(|at| at + text[at..].chars().next().map_or(1, char::len_utf8));
            match (first, last) {
                (Some(first), Some(last)) => {
                    (affix_parts(&text[..first], &minus, symbol), affix_parts(&text[last..], &minus, symbol))
                }
                _ => (Parts::new(), Parts::new()),
            }
        };
        let positive = split(format(&Decimal::from(1)));
        let mut negative = split(format(&Decimal::from(-1)));
        if negative == positive {
            // A formatter that writes -1 as it writes 1 leaves the sign to us: in front.
            negative.0.insert(0, Part::new("minusSign", &minus));
        }
        Affixes { positive, negative, plus }
    }

    fn wrap(&self, mut body: Parts, sign: Sign) -> Parts {
        // A plus sign goes where the minus sign is; a negative form without one (the
        // accounting "($1.00)") leaves it in front of the positive form.
        let minus_in_negative = self.negative.0.iter().chain(&self.negative.1).any(|p| p.kind == "minusSign");
        let (prefix, suffix) = match sign {
            Sign::None => &self.positive,
            Sign::Positive if !minus_in_negative => &self.positive,
            _ => &self.negative,
        };
        let mut out: Parts = Vec::with_capacity(prefix.len() + body.len() + suffix.len() + 1);
        if sign == Sign::Positive && !minus_in_negative {
            out.push(Part::new("plusSign", &self.plus));
        }
        let signed = |part: &Part| match (sign, part.kind) {
            (Sign::Positive, "minusSign") => Part::new("plusSign", &self.plus),
            _ => part.clone(),
        };
        out.extend(prefix.iter().map(signed));
        out.append(&mut body);
        out.extend(suffix.iter().map(signed));
        out
    }
}

/// The parts of the locale's sign for `sign` (none for [`Sign::None`]), with any marks
/// around it, as the digit formatter writes them.
fn sign_parts(digits: &DecimalFormatter, sign: Sign) -> Parts {
    if sign == Sign::None {
        return Parts::new();
    }
    parts_of(&digits.format(&Decimal::new(sign, 1u32.into()))).into_iter().filter(|p| p.kind != "integer").collect()
}

/// The locale's minus or plus sign alone.
fn sign_text(digits: &DecimalFormatter, sign: Sign) -> String {
    sign_parts(digits, sign).into_iter().filter(|p| p.kind == "minusSign" || p.kind == "plusSign").map(|p| p.text).collect()
}

/// An affix cut into its sign, its spaces (and direction marks) and its symbol.
fn affix_parts(affix: &str, minus: &str, symbol: &'static str) -> Parts {
    let mut out = Parts::new();
    let mut rest = affix;
    while !rest.is_empty() {
        if !minus.is_empty() && rest.starts_with(minus) {
            out.push(Part::new("minusSign", minus));
            rest = &rest[minus.len()..];
            continue;
        }
        let space = rest.chars().next().is_some_and(is_space_char);
        let end = rest
            .char_indices()
            .find(|&(i, c)| i > 0 && (is_space_char(c) != space || (!minus.is_empty() && rest[i..].starts_with(minus))))
            .map_or(rest.len(), |(i, _)| i);
        out.push(Part::new(if space { "literal" } else { symbol }, &rest[..end]));
        rest = &rest[end..];
    }
    out
}

/// A finite number as an exact decimal: its shortest round-trip digits, as
/// Number::toString has them.
pub fn decimal_of_number(x: f64) -> Option<Decimal> {
    Decimal::try_from_f64(x, FloatPrecision::RoundTrip).ok()
}

/// A decimal string (a BigInt's digits, or an ECMA-402 string numeric literal the
/// script half has checked).
pub fn decimal_of_text(text: &str) -> Option<Decimal> {
    Decimal::try_from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(style: Style, notation: Notation) -> NumberSpec {
        NumberSpec {
            style,
            notation,
            sign_display: SignDisplay::Auto,
            grouping: Some(GroupingStrategy::Auto),
            rounding: Rounding {
                minimum_integer: 1,
                minimum_fraction: 0,
                maximum_fraction: 3,
                minimum_significant: 1,
                maximum_significant: 21,
                kind: RoundingKind::Fraction,
                mode: SignedRoundingMode::Unsigned(UnsignedRoundingMode::HalfExpand),
                increment: 1,
                strip_if_integer: false,
            },
        }
    }

    fn format(locale: &str, spec: NumberSpec, x: f64) -> String {
        let format = NumberFormat::new(&locale.parse().unwrap(), spec).unwrap();
        format.format(&decimal_of_number(x).unwrap()).iter().map(|p| p.text.as_str()).collect()
    }

    fn currency(code: &str, display: CurrencyDisplay, accounting: bool, digits: i16) -> NumberSpec {
        let mut spec =
            spec(Style::Currency { code: CurrencyType::try_from_str(code).unwrap(), display, accounting }, Notation::Standard);
        spec.rounding.minimum_fraction = digits;
        spec.rounding.maximum_fraction = digits;
        spec
    }

    // Each expected string is what Node (V8 with full ICU) gives for the same options.
    #[test]
    fn decimals_follow_the_locale() {
        let plain = || spec(Style::Decimal, Notation::Standard);
        assert_eq!(format("en", plain(), 1234567.891), "1,234,567.891");
        assert_eq!(format("de", plain(), 1234567.891), "1.234.567,891");
        assert_eq!(format("fr-FR", plain(), 1234567.891), "1\u{202f}234\u{202f}567,891");
        assert_eq!(format("en-IN", plain(), 12345678.9), "1,23,45,678.9");
        assert_eq!(format("ar-EG", plain(), 1234.5), "١٬٢٣٤٫٥");
        assert_eq!(format("en", plain(), -0.0), "-0");
        assert_eq!(format("en", plain(), 2f64.powi(70)), "1,180,591,620,717,411,300,000");
    }

    #[test]
    fn rounding_takes_the_shortest_decimal_form() {
        let mut two = spec(Style::Decimal, Notation::Standard);
        two.rounding.minimum_fraction = 2;
        two.rounding.maximum_fraction = 2;
        assert_eq!(format("en", two, 1.005), "1.01");
        let mut increment = spec(Style::Decimal, Notation::Standard);
        increment.rounding.minimum_fraction = 2;
        increment.rounding.maximum_fraction = 2;
        increment.rounding.increment = 5;
        assert_eq!(format("en", increment, 1.23), "1.25");
        let mut integer = spec(Style::Decimal, Notation::Standard);
        integer.rounding.minimum_integer = 3;
        assert_eq!(format("en", integer, 5.0), "005");
        let mut significant = spec(Style::Decimal, Notation::Standard);
        significant.rounding.kind = RoundingKind::Significant;
        significant.rounding.maximum_significant = 3;
        assert_eq!(format("en", significant, 123456.0), "123,000");
        let mut less = spec(Style::Decimal, Notation::Standard);
        less.rounding.kind = RoundingKind::LessPrecision;
        less.rounding.maximum_significant = 2;
        assert_eq!(format("en", less, 1.23456), "1.2");
    }

    #[test]
    fn signs_show_as_asked() {
        let mut always = spec(Style::Percent, Notation::Standard);
        always.sign_display = SignDisplay::Always;
        always.rounding.maximum_fraction = 0;
        assert_eq!(format("en", always, 0.5), "+50%");
        let mut except_zero = spec(Style::Decimal, Notation::Standard);
        except_zero.sign_display = SignDisplay::ExceptZero;
        assert_eq!(format("en", except_zero, 0.0), "0");
    }

    #[test]
    fn percents_and_currencies_take_the_locale_pattern() {
        let mut percent = spec(Style::Percent, Notation::Standard);
        percent.rounding.maximum_fraction = 1;
        assert_eq!(format("de", percent, 0.2567), "25,7\u{a0}%");
        assert_eq!(format("en", currency("USD", CurrencyDisplay::Symbol, false, 2), -1234.5), "-$1,234.50");
        assert_eq!(format("de", currency("EUR", CurrencyDisplay::Symbol, false, 2), 1234.5), "1.234,50\u{a0}€");
        assert_eq!(format("en", currency("USD", CurrencyDisplay::Symbol, true, 2), -5.0), "($5.00)");
        assert_eq!(format("en", currency("EUR", CurrencyDisplay::Code, false, 2), 12.0), "EUR\u{a0}12.00");
        assert_eq!(format("ja", currency("JPY", CurrencyDisplay::Symbol, false, 0), 1234.5), "￥1,235");
    }

    #[test]
    fn compact_and_scientific_notations() {
        let compact = |notation| {
            let mut spec = spec(Style::Decimal, notation);
            spec.rounding.kind = RoundingKind::MorePrecision;
            spec.rounding.maximum_fraction = 0;
            spec.rounding.maximum_significant = 2;
            spec.grouping = Some(GroupingStrategy::Min2);
            spec
        };
        assert_eq!(format("en", compact(Notation::CompactShort), 1234567.0), "1.2M");
        assert_eq!(format("en", compact(Notation::CompactShort), 999999.0), "1M");
        assert_eq!(format("en", compact(Notation::CompactShort), -1500.0), "-1.5K");
        assert_eq!(format("en", compact(Notation::CompactLong), 1234567.0), "1.2 million");
        assert_eq!(format("de", compact(Notation::CompactLong), 2500000.0), "2,5 Millionen");
        assert_eq!(format("ja", compact(Notation::CompactShort), 123456789.0), "1.2億");
        assert_eq!(format("en", spec(Style::Decimal, Notation::Scientific), 123456.0), "1.235E5");
        assert_eq!(format("en", spec(Style::Decimal, Notation::Engineering), 123456.0), "123.456E3");
    }
}
