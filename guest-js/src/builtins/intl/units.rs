//! CLDR's unit patterns, for `Intl.NumberFormat`'s unit style and `Intl.DurationFormat`,
//! looked up in [`UNIT_DATA`] (see that file for its layout).
//!
//! A locale is found as the generator stored it: the most specific of its maximized tag,
//! language-script, language-region and language that the data has, then each locale's
//! parent. A width the chain has no record for falls back to the next wider one (narrow to
//! short to long), as the generator left out what equals it.

use icu::locale::{Locale, LocaleExpander};

use super::DATA;
use super::parts::{Part, Parts};
use super::unit_data::UNIT_DATA;

#[derive(Clone, Copy, PartialEq)]
pub enum UnitWidth {
    Long,
    Short,
    Narrow,
}

impl UnitWidth {
    fn name(self) -> &'static str {
        match self {
            UnitWidth::Long => "long",
            UnitWidth::Short => "short",
            UnitWidth::Narrow => "narrow",
        }
    }

    fn wider(self) -> Option<UnitWidth> {
        match self {
            UnitWidth::Long => None,
            UnitWidth::Short => Some(UnitWidth::Long),
            UnitWidth::Narrow => Some(UnitWidth::Short),
        }
    }
}

/// The data entries a locale's lookups read, most specific first.
struct Chain(Vec<&'static str>);

impl Chain {
    fn of(locale: &Locale) -> Chain {
        let mut id = locale.id.clone();
        // Without the data, the tag as given still finds its language's entry.
        if let Ok(expander) = LocaleExpander::try_new_extended_unstable(DATA) {
            expander.maximize(&mut id);
        }
        let tried = super::lookup_tags(&id);
        let mut chain = Vec::new();
        let mut at = tried.iter().find_map(|tag| entry(tag).map(|_| tag.clone()));
        // Bounded: a data error that made a cycle would otherwise never end.
        while let Some(tag) = at.take().filter(|_| chain.len() < 8) {
            let Some(lines) = entry(&tag) else { break };
            chain.push(lines);
            let parent = field(lines, "^").map(str::to_owned).or_else(|| tag.rfind('-').map(|cut| tag[..cut].to_owned()));
            at = parent.filter(|p| p != "root");
        }
        Chain(chain)
    }

    /// The value of `key`, from the most specific entry that has it.
    fn get(&self, key: &str) -> Option<&'static str> {
        self.0.iter().find_map(|lines| field(lines, key))
    }

    /// The record of `unit` in `width`, or in the next wider width.
    fn record(&self, unit: &str, width: UnitWidth) -> Option<&'static str> {
        let mut at = Some(width);
        while let Some(width) = at {
            if let Some(record) = self.get(&format!("{unit}|{}", width.name())) {
                return Some(record);
            }
            at = width.wider();
        }
        None
    }
}

fn entry(tag: &str) -> Option<&'static str> {
    UNIT_DATA.binary_search_by(|(name, _)| (*name).cmp(tag)).ok().map(|at| UNIT_DATA[at].1)
}

fn field(lines: &'static str, key: &str) -> Option<&'static str> {
    lines.split('\n').find_map(|line| line.strip_prefix(key)?.strip_prefix('\t'))
}

/// The separator of hours, minutes and seconds in `locale` (`:` in most, `.` in Finnish
/// and Danish).
pub fn time_separator(locale: &Locale) -> &'static str {
    Chain::of(locale).get(":").unwrap_or(":")
}

/// `locale`'s symbol for NaN ("NaN" in most, "非數值" in Traditional Chinese).
pub fn nan_symbol(locale: &Locale) -> &'static str {
    Chain::of(locale).get("nan").unwrap_or("NaN")
}

/// `locale`'s number range pattern (`{0}–{1}`), approximately pattern (`~{0}`) and
/// date range fallback pattern (`{0} – {1}`).
pub fn range_patterns(locale: &Locale) -> [&'static str; 3] {
    let chain = Chain::of(locale);
    [chain.get("-").unwrap_or("{0}–{1}"), chain.get("~").unwrap_or("~{0}"), chain.get("@").unwrap_or("{0} – {1}")]
}

/// One plural form of a unit: the text around the number (none for a form such as
/// Arabic's "دقيقتان", two minutes, which has no number).
#[derive(Clone)]
pub struct UnitPattern {
    before: Parts,
    after: Parts,
    shows_number: bool,
}

/// A unit's forms by plural category, `other` always there.
pub struct UnitPatterns {
    forms: Vec<(&'static str, UnitPattern)>,
}

impl UnitPatterns {
    /// `unit` (sanctioned, or `a-per-b` of two sanctioned units, as the script half
    /// checked) in `locale` and `width`.
    pub fn new(locale: &Locale, unit: &str, width: UnitWidth) -> Result<UnitPatterns, String> {
        let chain = Chain::of(locale);
        let missing = || format!("Intl.NumberFormat: no data for the unit {unit} in {locale}");
        let texts = match chain.record(unit, width) {
            Some(record) => forms(record),
            None => {
                let (numerator, denominator) = unit.split_once("-per-").ok_or_else(missing)?;
                let numerator = forms(chain.record(numerator, width).ok_or_else(missing)?);
                let denominator = chain.record(denominator, width).ok_or_else(missing)?;
                let per = match record_field(denominator, "per") {
                    Some(per) => per.to_owned(),
                    // "{0} per {1}", {1} the denominator's singular without its number.
                    None => {
                        let compound = chain.get(&format!("*|{}", width.name())).unwrap_or("{0}/{1}");
                        let one = record_field(denominator, "one").or_else(|| record_field(denominator, "other")).unwrap_or("");
                        compound.replace("{1}", one.replace("{0}", "").trim())
                    }
                };
                numerator.into_iter().map(|(category, text)| (category, per.replace("{0}", &text))).collect()
            }
        };
        let forms = texts.into_iter().map(|(category, text)| (category, UnitPattern::parse(&text))).collect();
        Ok(UnitPatterns { forms })
    }

    /// The form for a plural category, or `other`'s.
    pub fn form(&self, category: &str) -> &UnitPattern {
        let other = || self.forms.iter().find(|(c, _)| *c == "other").map(|(_, p)| p).expect("every record has other");
        self.forms.iter().find(|(c, _)| *c == category).map_or_else(other, |(_, p)| p)
    }
}

impl UnitPattern {
    fn parse(text: &str) -> UnitPattern {
        match text.split_once("{0}") {
            Some((before, after)) => UnitPattern { before: unit_parts(before), after: unit_parts(after), shows_number: true },
            None => UnitPattern { before: unit_parts(text), after: Parts::new(), shows_number: false },
        }
    }

    /// The signed number's parts put in the pattern.
    pub fn wrap(&self, number: Parts) -> Parts {
        let mut out = self.before.clone();
        if self.shows_number {
            out.extend(number);
        }
        out.extend(self.after.iter().cloned());
        out
    }
}

/// A record's `category=pattern` fields, `other` first.
fn forms(record: &str) -> Vec<(&'static str, String)> {
    ["other", "zero", "one", "two", "few", "many"]
        .into_iter()
        .filter_map(|category| record_field(record, category).map(|text| (category, text.to_owned())))
        .collect()
}

fn record_field<'a>(record: &'a str, name: &str) -> Option<&'a str> {
    record.split('\u{1f}').find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
}

/// Pattern text as parts: the space at either end is a literal, what is between (spaces
/// included, as in "kilometers per hour") is the unit.
fn unit_parts(text: &str) -> Parts {
    let space = |c: char| c.is_whitespace() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}');
    let core = text.trim_matches(space);
    let start = text.len() - text.trim_start_matches(space).len();
    let mut out = Parts::new();
    for (kind, piece) in [("literal", &text[..start]), ("unit", core), ("literal", &text[start + core.len()..])] {
        if !piece.is_empty() {
            out.push(Part::new(kind, piece));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(locale: &str, unit: &str, width: UnitWidth, category: &str) -> String {
        let patterns = UnitPatterns::new(&locale.parse().unwrap(), unit, width).unwrap();
        let number = vec![Part::new("integer", "N")];
        patterns.form(category).wrap(number).into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn simple_units_follow_width_and_plural() {
        assert_eq!(text("en", "kilometer", UnitWidth::Long, "one"), "N kilometer");
        assert_eq!(text("en", "kilometer", UnitWidth::Long, "other"), "N kilometers");
        assert_eq!(text("en", "kilometer", UnitWidth::Short, "other"), "N km");
        assert_eq!(text("en", "percent", UnitWidth::Narrow, "other"), "N%");
        assert_eq!(text("de", "byte", UnitWidth::Long, "other"), "N Byte");
        // A regional English inherits en-001's spelling.
        assert_eq!(text("en-GB", "meter", UnitWidth::Long, "other"), "N metres");
        assert_eq!(text("en-AU", "meter", UnitWidth::Long, "other"), "N metres");
        assert_eq!(text("en-US", "meter", UnitWidth::Long, "other"), "N meters");
        // A category the record leaves out is `other`'s.
        assert_eq!(text("ja", "hour", UnitWidth::Long, "one"), "N 時間");
    }

    #[test]
    fn compound_units_use_the_per_patterns() {
        // CLDR names this one.
        assert_eq!(text("en", "kilometer-per-hour", UnitWidth::Short, "other"), "N km/h");
        // The denominator's per-unit pattern.
        assert_eq!(text("en", "gram-per-liter", UnitWidth::Long, "other"), "N grams per liter");
        // The compound pattern with the denominator's singular.
        assert_eq!(text("en", "byte-per-acre", UnitWidth::Long, "one"), "N byte per acre");
        assert_eq!(text("en", "byte-per-acre", UnitWidth::Short, "other"), "N byte/ac");
    }

    #[test]
    fn a_unit_is_one_part_between_its_spaces() {
        let patterns = UnitPatterns::new(&"en".parse().unwrap(), "kilometer-per-hour", UnitWidth::Long).unwrap();
        let parts = patterns.form("other").wrap(vec![Part::new("integer", "5")]);
        let kinds: Vec<_> = parts.iter().map(|p| (p.kind, p.text.as_str())).collect();
        assert_eq!(kinds, [("integer", "5"), ("literal", " "), ("unit", "kilometers per hour")]);
    }

    #[test]
    fn time_separators_follow_the_locale() {
        assert_eq!(time_separator(&"en".parse().unwrap()), ":");
        assert_eq!(time_separator(&"fi".parse().unwrap()), ".");
        assert_eq!(time_separator(&"sw".parse().unwrap()), ":");
        assert_eq!(nan_symbol(&"zh-TW".parse().unwrap()), "非數值");
        assert_eq!(nan_symbol(&"zh".parse().unwrap()), "NaN");
        assert_eq!(range_patterns(&"pt-PT".parse().unwrap()), ["{0} - {1}", "~{0}", "{0}\u{2009}–\u{2009}{1}"]);
        assert_eq!(range_patterns(&"de".parse().unwrap()), ["{0}–{1}", "≈{0}", "{0}\u{2009}–\u{2009}{1}"]);
        assert_eq!(range_patterns(&"ja".parse().unwrap()), ["{0}～{1}", "約 {0}", "{0}～{1}"]);
    }
}
