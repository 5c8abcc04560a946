//! The native half of `Intl.DateTimeFormat` (and of `Date.prototype.toLocale*String`, which
//! the script half routes through it): ICU4X's semantic date-time formatter, with the time
//! zone rules of the IANA database (through `jiff`, which carries its own copy).
//!
//! The script half reads and checks the options in the standard's order and chooses the
//! locale; `dateTimeResolve` builds a formatter for them, keeps it for the rest of the run
//! and returns its index with what `resolvedOptions()` reports; `dateTimeFormat` formats an
//! instant with it as `formatToParts` parts, flat (`[type, value, type, value, …]`, as the
//! other `Intl` natives return theirs). `timeZoneCanonical` and `timeZones` answer the
//! `timeZone` option and `Intl.supportedValuesOf("timeZone")`.
//!
//! ICU4X's field sets are coarser than ECMA-402's component options: one length for all
//! names, no narrow names, no flexible day periods, no minute without the hour. The bag is
//! mapped to the closest field set, and the output is then brought to what V8 (Node 20)
//! writes where the difference is mechanical: names in the width asked for, numeric fields
//! as wide as V8 has them, the era of far years dropped, a zone name joined to a date the
//! way V8 joins it, and a plain space where CLDR has U+202F (before "AM" in English), as
//! V8's `format` writes it (its `formatToParts` keeps the U+202F).
//!
//! Only the Gregorian, Buddhist and Japanese calendars are formatted; a locale or option
//! asking for another gets the locale's default among them (Gregorian for most).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::rc::Rc;

use super::MAX_FORMATTERS;
use icu::calendar::cal::{Buddhist, Gregorian, Japanese};
use icu::calendar::preferences::CalendarPreferences;
use icu::calendar::types::RataDie;
use icu::calendar::{AnyCalendarKind, Date, Iso};
use icu::datetime::fieldsets::YMD;
use icu::datetime::fieldsets::builder::{BuilderError, DateFields, FieldSetBuilder, ZoneStyle};
use icu::datetime::fieldsets::enums::{CompositeDateTimeFieldSet, CompositeFieldSet, DateFieldSet};
use icu::datetime::options::{Alignment, Length, SubsecondDigits, TimePrecision, YearStyle};
use icu::datetime::pattern::{DateTimePattern, DayPeriodNameLength, FixedCalendarDateTimeNames};
use icu::datetime::{DateTimeFormatter, DateTimeFormatterPreferences, FixedCalendarDateTimeFormatter};
use icu::decimal::input::Decimal;
use icu::decimal::{DecimalFormatter, DecimalFormatterPreferences};
use icu::locale::{LanguageIdentifier, Locale};
use icu::time::zone::iana::IanaParserExtended;
use icu::time::zone::{IanaParser, UtcOffset, models};
use icu::time::{DateTime, Time, TimeZone, TimeZoneInfo, ZonedDateTime};
use rquickjs::function::Func;
use rquickjs::{Ctx, Exception, Object};
use writeable::{Part, PartsWrite, TryWriteable, Writeable};

/// Adds the date-time natives to the `Intl` natives object.
pub fn natives<'js>(_ctx: &Ctx<'js>, intl: &Object<'js>) -> rquickjs::Result<()> {
    intl.set(
        "dateTimeResolve",
        Func::from(|ctx: Ctx<'js>, locale: String, options: Object<'js>| -> rquickjs::Result<Object<'js>> {
            let options = read_options(&ctx, &options)?;
            let (handle, resolved) = resolve(&locale, &options).map_err(|failure| thrown(&ctx, failure))?;
            resolved_object(&ctx, handle, &resolved)
        }),
    )?;
    intl.set(
        "dateTimeFormat",
        Func::from(|ctx: Ctx<'js>, handle: u32, epoch_ms: f64| -> rquickjs::Result<super::DefinedArray<String>> {
            let parts = format_parts(handle, epoch_ms)
                .ok_or_else(|| Exception::throw_type(&ctx, "Intl.DateTimeFormat: not a date-time formatter"))?;
            Ok(parts.into_iter().flat_map(|(kind, value)| [kind.to_string(), value]).collect())
        }),
    )?;
    intl.set("timeZoneCanonical", Func::from(|name: String| canonical_time_zone(&name)))?;
    intl.set("timeZones", Func::from(time_zones))?;
    Ok(())
}

/// The options object the script half passes, as strings (the values it validated).
fn read_options<'js>(ctx: &Ctx<'js>, options: &Object<'js>) -> rquickjs::Result<Options> {
    let text = |name: &str| options.get::<_, Option<String>>(name);
    let fractional_second_digits = match options.get::<_, Option<f64>>("fractionalSecondDigits")? {
        None => None,
        Some(n) if n == 1.0 || n == 2.0 || n == 3.0 => Some(n as u8),
        Some(_) => return Err(Exception::throw_range(ctx, "fractionalSecondDigits value is out of range.")),
    };
    Ok(Options {
        calendar: text("calendar")?,
        numbering_system: text("numberingSystem")?,
        hour12: options.get("hour12")?,
        hour_cycle: text("hourCycle")?,
        time_zone: text("timeZone")?,
        weekday: text("weekday")?,
        era: text("era")?,
        year: text("year")?,
        month: text("month")?,
        day: text("day")?,
        day_period: text("dayPeriod")?,
        hour: text("hour")?,
        minute: text("minute")?,
        second: text("second")?,
        fractional_second_digits,
        time_zone_name: text("timeZoneName")?,
        date_style: text("dateStyle")?,
        time_style: text("timeStyle")?,
        defaults: text("defaults")?,
        required: text("required")?,
    })
}

/// `{ handle, locale, calendar, … }`: the formatter's index and its resolved options, in
/// the order `resolvedOptions()` lists them.
fn resolved_object<'js>(ctx: &Ctx<'js>, handle: u32, resolved: &Resolved) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    // No prototype: a setter a script put on `Object.prototype` must not see these.
    object.set_prototype(None)?;
    object.set("handle", handle)?;
    object.set("locale", resolved.locale.as_str())?;
    object.set("calendar", resolved.calendar)?;
    object.set("numberingSystem", resolved.numbering_system)?;
    object.set("timeZone", resolved.time_zone.as_str())?;
    if let Some(hour_cycle) = resolved.hour_cycle {
        object.set("hourCycle", hour_cycle)?;
        object.set("hour12", matches!(hour_cycle, "h11" | "h12"))?;
    }
    for &(name, value) in &resolved.components {
        if name == "timeZoneName"
            && let Some(digits) = resolved.fractional_second_digits
        {
            object.set("fractionalSecondDigits", digits)?;
        }
        object.set(name, value)?;
    }
    if let Some(digits) = resolved.fractional_second_digits
        && !resolved.components.iter().any(|&(name, _)| name == "timeZoneName")
    {
        object.set("fractionalSecondDigits", digits)?;
    }
    if let Some(style) = resolved.date_style {
        object.set("dateStyle", style)?;
    }
    if let Some(style) = resolved.time_style {
        object.set("timeStyle", style)?;
    }
    Ok(object)
}

fn thrown(ctx: &Ctx<'_>, failure: Failure) -> rquickjs::Error {
    match failure {
        Failure::Range(message) => Exception::throw_range(ctx, &message),
        Failure::Type(message) => Exception::throw_type(ctx, &message),
    }
}

// ---------------------------------------------------------------------------------------
// Options. Everything from here on is plain Rust, testable without an engine.

/// An error `dateTimeResolve` throws, as the error type ECMA-402 (or V8) names.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    Range(String),
    Type(String),
}

/// The options as the script half passes them. `defaults` is which fields a call adds when
/// it is given none of those it needs: `"date"` (`Intl.DateTimeFormat`,
/// `toLocaleDateString`; also when absent), `"time"` (`toLocaleTimeString`) or `"all"`
/// (`toLocaleString`). What it needs, the standard's `required`, follows from `defaults`
/// (`"any"`, `"time"`, `"any"`) unless given: only `toLocaleDateString` has `"date"`, which
/// adds the date to a time field alone, so that call passes it.
#[derive(Debug, Default, Clone)]
struct Options {
    calendar: Option<String>,
    numbering_system: Option<String>,
    hour12: Option<bool>,
    hour_cycle: Option<String>,
    time_zone: Option<String>,
    weekday: Option<String>,
    era: Option<String>,
    year: Option<String>,
    month: Option<String>,
    day: Option<String>,
    day_period: Option<String>,
    hour: Option<String>,
    minute: Option<String>,
    second: Option<String>,
    fractional_second_digits: Option<u8>,
    time_zone_name: Option<String>,
    date_style: Option<String>,
    time_style: Option<String>,
    defaults: Option<String>,
    required: Option<String>,
}

/// The width of `weekday`, `era` and `dayPeriod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    Narrow,
    Short,
    Long,
}

impl Text {
    /// The length of the pattern field that writes it (`EEE`, `EEEE`, `EEEEE`).
    fn count(self) -> usize {
        match self {
            Text::Short => 3,
            Text::Long => 4,
            Text::Narrow => 5,
        }
    }
}

/// The width of `year`, `day`, `hour`, `minute` and `second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Digits {
    Numeric,
    TwoDigit,
}

/// The width of `month`, which is either kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MonthWidth {
    Numeric,
    TwoDigit,
    Name(Text),
}

/// `dateStyle` and `timeStyle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Full,
    Long,
    Medium,
    Short,
}

impl Style {
    fn name(self) -> &'static str {
        match self {
            Style::Full => "full",
            Style::Long => "long",
            Style::Medium => "medium",
            Style::Short => "short",
        }
    }

    fn length(self) -> Length {
        match self {
            Style::Full | Style::Long => Length::Long,
            Style::Medium => Length::Medium,
            Style::Short => Length::Short,
        }
    }
}

/// The component options, parsed.
#[derive(Debug, Clone, Copy, Default)]
struct Bag {
    weekday: Option<Text>,
    era: Option<Text>,
    year: Option<Digits>,
    month: Option<MonthWidth>,
    day: Option<Digits>,
    day_period: Option<Text>,
    hour: Option<Digits>,
    minute: Option<Digits>,
    second: Option<Digits>,
    fractional_second_digits: Option<u8>,
    time_zone_name: Option<ZoneStyle>,
}

impl Bag {
    /// Whether a date field is asked for (the standard's list, which leaves out `era`).
    fn has_date(&self) -> bool {
        self.weekday.is_some() || self.year.is_some() || self.month.is_some() || self.day.is_some()
    }

    fn has_time(&self) -> bool {
        self.day_period.is_some()
            || self.hour.is_some()
            || self.minute.is_some()
            || self.second.is_some()
            || self.fractional_second_digits.is_some()
    }

    fn month_name(&self) -> Option<Text> {
        match self.month {
            Some(MonthWidth::Name(width)) => Some(width),
            _ => None,
        }
    }
}

fn out_of_range(name: &str, value: &str) -> Failure {
    Failure::Range(format!("Value {value} out of range for Intl.DateTimeFormat options property {name}"))
}

fn text_option(name: &str, value: Option<&str>) -> Result<Option<Text>, Failure> {
    value
        .map(|v| match v {
            "narrow" => Ok(Text::Narrow),
            "short" => Ok(Text::Short),
            "long" => Ok(Text::Long),
            _ => Err(out_of_range(name, v)),
        })
        .transpose()
}

fn digits_option(name: &str, value: Option<&str>) -> Result<Option<Digits>, Failure> {
    value
        .map(|v| match v {
            "numeric" => Ok(Digits::Numeric),
            "2-digit" => Ok(Digits::TwoDigit),
            _ => Err(out_of_range(name, v)),
        })
        .transpose()
}

fn style_option(name: &str, value: Option<&str>) -> Result<Option<Style>, Failure> {
    value
        .map(|v| match v {
            "full" => Ok(Style::Full),
            "long" => Ok(Style::Long),
            "medium" => Ok(Style::Medium),
            "short" => Ok(Style::Short),
            _ => Err(out_of_range(name, v)),
        })
        .transpose()
}

impl Options {
    fn bag(&self) -> Result<Bag, Failure> {
        let month = match self.month.as_deref() {
            Some("numeric") => Some(MonthWidth::Numeric),
            Some("2-digit") => Some(MonthWidth::TwoDigit),
            other => text_option("month", other)?.map(MonthWidth::Name),
        };
        let time_zone_name = self
            .time_zone_name
            .as_deref()
            .map(|v| match v {
                "short" => Ok(ZoneStyle::SpecificShort),
                "long" => Ok(ZoneStyle::SpecificLong),
                "shortOffset" => Ok(ZoneStyle::LocalizedOffsetShort),
                "longOffset" => Ok(ZoneStyle::LocalizedOffsetLong),
                "shortGeneric" => Ok(ZoneStyle::GenericShort),
                "longGeneric" => Ok(ZoneStyle::GenericLong),
                _ => Err(out_of_range("timeZoneName", v)),
            })
            .transpose()?;
        if self.fractional_second_digits.is_some_and(|n| !(1..=3).contains(&n)) {
            return Err(Failure::Range("fractionalSecondDigits value is out of range.".into()));
        }
        Ok(Bag {
            weekday: text_option("weekday", self.weekday.as_deref())?,
            era: text_option("era", self.era.as_deref())?,
            year: digits_option("year", self.year.as_deref())?,
            month,
            day: digits_option("day", self.day.as_deref())?,
            day_period: text_option("dayPeriod", self.day_period.as_deref())?,
            hour: digits_option("hour", self.hour.as_deref())?,
            minute: digits_option("minute", self.minute.as_deref())?,
            second: digits_option("second", self.second.as_deref())?,
            fractional_second_digits: self.fractional_second_digits,
            time_zone_name,
        })
    }
}

/// ECMA-402's CreateDateTimeFormat: the styles, and the component bag with the defaults the
/// call adds when it asks for none of the fields it needs.
fn requested(options: &Options) -> Result<(Bag, Option<Style>, Option<Style>), Failure> {
    let mut bag = options.bag()?;
    let date_style = style_option("dateStyle", options.date_style.as_deref())?;
    let time_style = style_option("timeStyle", options.time_style.as_deref())?;
    let defaults = options.defaults.as_deref().unwrap_or("date");
    let required = match (options.required.as_deref(), defaults) {
        (Some(required @ ("date" | "time" | "any")), _) => required,
        (Some(other), _) => return Err(out_of_range("required", other)),
        (None, "time") => "time",
        (None, "date" | "all") => "any",
        (None, other) => return Err(out_of_range("defaults", other)),
    };
    // The messages are V8's.
    if required == "date" && time_style.is_some() {
        return Err(Failure::Type("Invalid option : timeStyle".into()));
    }
    if required == "time" && date_style.is_some() {
        return Err(Failure::Type("Invalid option : dateStyle".into()));
    }
    let styled = date_style.is_some() || time_style.is_some();
    if styled && (bag.has_date() || bag.has_time() || bag.era.is_some() || bag.time_zone_name.is_some()) {
        let style = if date_style.is_some() { "dateStyle" } else { "timeStyle" };
        return Err(Failure::Type(format!("Invalid option : {style}")));
    }
    let needs_defaults = !styled
        && match required {
            "date" => !bag.has_date(),
            "time" => !bag.has_time(),
            _ => !bag.has_date() && !bag.has_time(),
        };
    if needs_defaults {
        if defaults != "time" {
            (bag.year, bag.month, bag.day) = (Some(Digits::Numeric), Some(MonthWidth::Numeric), Some(Digits::Numeric));
        }
        if defaults != "date" {
            (bag.hour, bag.minute, bag.second) = (Some(Digits::Numeric), Some(Digits::Numeric), Some(Digits::Numeric));
        }
    }
    Ok((bag, date_style, time_style))
}

// ---------------------------------------------------------------------------------------
// Locale preferences: calendar, numbering system, hour cycle.

/// The calendars formatters are built for.
const CALENDARS: [(&str, AnyCalendarKind); 3] =
    [("gregory", AnyCalendarKind::Gregorian), ("buddhist", AnyCalendarKind::Buddhist), ("japanese", AnyCalendarKind::Japanese)];

/// The numbering systems ICU4X has digits for, by the digit zero they write.
const NUMBERING_SYSTEMS: [(&str, char); 23] = [
    ("adlm", '\u{1E950}'),
    ("arab", '\u{0660}'),
    ("arabext", '\u{06F0}'),
    ("beng", '\u{09E6}'),
    ("cakm", '\u{11136}'),
    ("deva", '\u{0966}'),
    ("gujr", '\u{0AE6}'),
    ("guru", '\u{0A66}'),
    ("hanidec", '\u{3007}'),
    ("khmr", '\u{17E0}'),
    ("knda", '\u{0CE6}'),
    ("laoo", '\u{0ED0}'),
    ("latn", '0'),
    ("mlym", '\u{0D66}'),
    ("mymr", '\u{1040}'),
    ("nkoo", '\u{07C0}'),
    ("olck", '\u{1C50}'),
    ("orya", '\u{0B66}'),
    ("tamldec", '\u{0BE6}'),
    ("telu", '\u{0C66}'),
    ("thai", '\u{0E50}'),
    ("tibt", '\u{0F20}'),
    ("vaii", '\u{A620}'),
];

/// What the locale and the options choose, as ICU4X reads it and as `resolvedOptions()`
/// reports it.
struct Preferences {
    /// The tag ICU4X's constructors read: the language, script and region, with the
    /// calendar, hour cycle and numbering system as `-u-` keys.
    icu_locale: Locale,
    /// The language, script and region, and the numbering system chosen, to make the tag
    /// again with another hour cycle.
    base: String,
    chosen_numbering_system: Option<&'static str>,
    /// The locale reported: the language, script and region, with the `-u-` keys that were
    /// used as the locale gave them.
    locale: String,
    calendar: &'static str,
    calendar_kind: AnyCalendarKind,
    numbering_system: &'static str,
    /// The ten digits of the numbering system.
    digits: [char; 10],
    /// `hourCycle: "h24"`, which ICU4X has no pattern for: formatted as h23, midnight as 24.
    h24: bool,
    /// Neither the options nor the locale chose an hour cycle.
    own_hour_cycle: bool,
}

/// The value of a `-u-` keyword of `locale`.
fn keyword(locale: &Locale, name: &str) -> Option<String> {
    locale.extensions.unicode.keywords.iter().find(|(key, _)| key.as_str() == name).map(|(_, value)| value.to_string())
}

/// ECMA-402's ResolveLocale for the keys a date format reads: an option wins over the
/// locale's key, and either is taken only when supported; a key the option overrides, or
/// that is not supported, leaves the reported locale.
fn preferences(tag: &str, options: &Options) -> Result<Preferences, Failure> {
    let incorrect = || Failure::Range(format!("Incorrect locale information provided: {tag}"));
    let locale = Locale::try_from_str(tag).map_err(|_| incorrect())?;

    let calendar_named = |name: Option<&str>| CALENDARS.iter().find(|(id, _)| Some(*id) == name).copied();
    let ca = keyword(&locale, "ca");
    let (calendar, calendar_kind) = calendar_named(options.calendar.as_deref())
        .or_else(|| calendar_named(ca.as_deref()))
        .or_else(|| {
            let default = data::default_calendar(&locale.id);
            CALENDARS.iter().find(|(_, kind)| *kind == default).copied()
        })
        .unwrap_or(CALENDARS[0]);

    let nu_named = |name: Option<&str>| NUMBERING_SYSTEMS.iter().find(|(id, _)| Some(*id) == name).map(|(id, _)| *id);
    let nu = keyword(&locale, "nu");
    let numbering_system = nu_named(options.numbering_system.as_deref()).or_else(|| nu_named(nu.as_deref()));

    // `hour12` wins over `hourCycle`, which wins over `-u-hc`. `hour12` picks the locale's
    // own 12- or 24-hour clock, as ECMA-402 has since 2023 (V8 in Node 20 still maps
    // `hour12: false` to h24 in 12-hour locales, and writes midnight as 24:00).
    let hc = keyword(&locale, "hc").filter(|hc| matches!(hc.as_str(), "h11" | "h12" | "h23" | "h24"));
    let hour_cycle = match (options.hour12, options.hour_cycle.as_deref()) {
        (Some(true), _) => Some("c12"),
        (Some(false), _) => Some("c24"),
        (None, Some(hc @ ("h11" | "h12" | "h23" | "h24"))) => Some(hc),
        (None, Some(other)) => return Err(out_of_range("hourCycle", other)),
        (None, None) => hc.as_deref(),
    };
    let h24 = hour_cycle == Some("h24");

    let base = locale.id.to_string();
    let icu_locale = tag_for_icu(&base, calendar, hour_cycle.map(|hc| if h24 { "h23" } else { hc }), numbering_system)
        .ok_or_else(incorrect)?;
    let digits = data::digits(&icu_locale)?;
    let chosen = numbering_system;
    let numbering_system = NUMBERING_SYSTEMS.iter().find(|(_, zero)| *zero == digits[0]).map_or("latn", |(id, _)| *id);

    // The keys sorted, as a canonical tag has them.
    let kept = [
        ("ca", ca.as_deref().filter(|&ca| ca == calendar)),
        ("hc", hc.as_deref().filter(|&hc| options.hour12.is_none() && Some(hc) == hour_cycle)),
        ("nu", nu.as_deref().filter(|&nu| nu == numbering_system)),
    ];
    let mut reported = base.clone();
    for (i, (key, value)) in kept.iter().filter_map(|(key, value)| value.map(|v| (key, v))).enumerate() {
        reported.push_str(if i == 0 { "-u-" } else { "-" });
        reported.push_str(key);
        reported.push('-');
        reported.push_str(value);
    }

    Ok(Preferences {
        icu_locale,
        base,
        chosen_numbering_system: chosen,
        locale: reported,
        calendar,
        calendar_kind,
        numbering_system,
        digits,
        h24,
        own_hour_cycle: hour_cycle.is_none(),
    })
}

/// The tag ICU4X's constructors read (keys sorted, as a canonical tag has them).
fn tag_for_icu(base: &str, calendar: &str, hour_cycle: Option<&str>, numbering_system: Option<&str>) -> Option<Locale> {
    let mut tag = format!("{base}-u-ca-{calendar}");
    for (key, value) in [("hc", hour_cycle), ("nu", numbering_system)] {
        if let Some(value) = value {
            tag.push_str(&format!("-{key}-{value}"));
        }
    }
    Locale::try_from_str(&tag).ok()
}

// ---------------------------------------------------------------------------------------
// Field sets.

/// The ICU4X field set closest to an ECMA-402 style or component bag. `long_names` asks for
/// the long length whatever the widths (see [`build`]).
fn field_set(bag: &Bag, date_style: Option<Style>, time_style: Option<Style>, long_names: bool) -> CompositeFieldSet {
    build_field_set(builder_for(bag, date_style, time_style, long_names))
}

/// The options of [`field_set`], before they are built.
fn builder_for(bag: &Bag, date_style: Option<Style>, time_style: Option<Style>, long_names: bool) -> FieldSetBuilder {
    let mut builder = FieldSetBuilder::new();
    if date_style.is_some() || time_style.is_some() {
        if let Some(style) = date_style {
            builder.date_fields = Some(if style == Style::Full { DateFields::YMDE } else { DateFields::YMD });
            builder.length = Some(style.length());
        }
        if let Some(style) = time_style {
            builder.time_precision = Some(if style == Style::Short { TimePrecision::Minute } else { TimePrecision::Second });
            builder.zone_style = match style {
                Style::Full => Some(ZoneStyle::SpecificLong),
                Style::Long => Some(ZoneStyle::SpecificShort),
                Style::Medium | Style::Short => None,
            };
            // With a date, the date's length chooses the words that join them.
            builder.length.get_or_insert(style.length());
        }
        return builder;
    }

    let year = bag.year.is_some() || bag.era.is_some();
    // ICU4X has no field set for a year and day without the month, or a weekday and month
    // without the day: those show the missing field too.
    let mut date_fields = match (year, bag.month.is_some(), bag.day.is_some(), bag.weekday.is_some()) {
        (false, false, false, false) => None,
        (false, false, false, true) => Some(DateFields::E),
        (false, false, true, true) => Some(DateFields::DE),
        (false, true, _, true) => Some(DateFields::MDE),
        (true, _, _, true) => Some(DateFields::YMDE),
        (true, false, false, false) => Some(DateFields::Y),
        (false, true, false, false) => Some(DateFields::M),
        (true, true, false, false) => Some(DateFields::YM),
        (false, false, true, false) => Some(DateFields::D),
        (false, true, true, false) => Some(DateFields::MD),
        (true, _, true, false) => Some(DateFields::YMD),
    };
    let time_precision = match (bag.fractional_second_digits, bag.second, bag.minute) {
        (Some(1), ..) => Some(TimePrecision::Subsecond(SubsecondDigits::S1)),
        (Some(2), ..) => Some(TimePrecision::Subsecond(SubsecondDigits::S2)),
        (Some(_), ..) => Some(TimePrecision::Subsecond(SubsecondDigits::S3)),
        (None, Some(_), _) => Some(TimePrecision::Second),
        (None, None, Some(_)) => Some(TimePrecision::Minute),
        // A day period alone is formatted from an hour (see `Shape::DayPeriodAlone`).
        _ if bag.hour.is_some() || bag.day_period.is_some() => Some(TimePrecision::Hour),
        _ => None,
    };
    // A month or year alone (a "calendar period") has no ICU4X form with a time or a zone:
    // the day is added.
    if time_precision.is_some() || bag.time_zone_name.is_some() {
        date_fields = date_fields.map(|fields| match fields {
            DateFields::M => DateFields::MD,
            DateFields::Y | DateFields::YM => DateFields::YMD,
            other => other,
        });
    }
    builder.date_fields = date_fields;
    builder.time_precision = time_precision;
    builder.zone_style = bag.time_zone_name;
    // One length serves all names, and there is no narrow one: the month chooses it, then
    // the weekday, then the era. Names in other widths are rewritten afterwards.
    builder.length = match (bag.month, bag.weekday, bag.era) {
        _ if long_names => Some(Length::Long),
        (Some(MonthWidth::Numeric | MonthWidth::TwoDigit), _, _) => Some(Length::Short),
        (Some(MonthWidth::Name(Text::Long)), _, _) | (None, Some(Text::Long), _) => Some(Length::Long),
        (Some(_), _, _) | (None, Some(_), _) => Some(Length::Medium),
        (None, None, Some(Text::Long)) => Some(Length::Long),
        (None, None, Some(Text::Short)) => Some(Length::Medium),
        (None, None, Some(Text::Narrow)) => Some(Length::Short),
        (None, None, None) => None,
    };
    // Padding is one switch for every numeric field.
    if bag.month == Some(MonthWidth::TwoDigit) || bag.day == Some(Digits::TwoDigit) || bag.hour == Some(Digits::TwoDigit) {
        builder.alignment = Some(Alignment::Column);
    }
    builder.year_style = match (bag.era, bag.year) {
        (Some(_), _) => Some(YearStyle::WithEra),
        (None, Some(Digits::Numeric)) => Some(YearStyle::Full),
        // Two digits where the short date has them; elsewhere they are cut afterwards.
        (None, Some(Digits::TwoDigit)) => Some(YearStyle::Auto),
        (None, None) => None,
    };
    builder
}

/// Builds the field set, leaving out what the chosen one has no use for (a length for a
/// time alone, a year style without a year).
fn build_field_set(builder: FieldSetBuilder) -> CompositeFieldSet {
    let built = match builder.clone().build_composite() {
        Err(BuilderError::SuperfluousOptions(extra)) => {
            let mut builder = builder;
            if extra.length.is_some() {
                builder.length = None;
            }
            if extra.alignment.is_some() {
                builder.alignment = None;
            }
            if extra.year_style.is_some() {
                builder.year_style = None;
            }
            builder.build_composite()
        }
        other => other,
    };
    // Every bag above has a date, a time or a zone, so this is only a guard.
    built.unwrap_or(CompositeFieldSet::Date(DateFieldSet::YMD(YMD::short())))
}

// ---------------------------------------------------------------------------------------
// Resolving: the formatter, what its pattern shows, and how its output is brought to V8's.

/// What `resolvedOptions()` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resolved {
    locale: String,
    calendar: &'static str,
    numbering_system: &'static str,
    time_zone: String,
    /// The hour cycle, when the format shows an hour.
    hour_cycle: Option<&'static str>,
    /// The component fields shown, as `(option, value)`, in `resolvedOptions()` order.
    components: Vec<(&'static str, &'static str)>,
    fractional_second_digits: Option<u8>,
    date_style: Option<&'static str>,
    time_style: Option<&'static str>,
}

/// One formatter, as `dateTimeFormat` uses it.
struct Entry {
    resolved: Resolved,
    formatter: DateTimeFormatter<CompositeFieldSet>,
    zone: Zone,
    digits: [char; 10],
    h24: bool,
    /// The widths day, month and hour are written in where V8's differ from ICU4X's (see
    /// [`NUMERIC_WIDTHS`]); 0 leaves a field as it is.
    widths: [u8; 3],
    /// `year: "2-digit"` where ICU4X writes the whole year: the last two digits are kept.
    two_digit_year: bool,
    /// ICU4X shows the era of years before 1 and soon after (`1/1/1 AD`); V8 only where
    /// the pattern has it, so an era the pattern of a present-day date lacks is dropped.
    drop_era: bool,
    /// Names written again in the width asked for.
    names: Option<Box<NameFix>>,
    shape: Shape,
    /// A date shown with a zone name but no time: V8 joins them as it joins a date and a
    /// time (`1/5/2024, EST`), ICU4X with a space. The joining text, and whether the zone
    /// comes after the date.
    zone_glue: Option<(String, bool)>,
    /// What joins the date and the time, where the formatter's long length has other words
    /// than V8's choice: the text the formatter ends the join with, and its replacement.
    time_glue: Option<(String, String)>,
}

/// Formats with fewer fields than any ICU4X field set, cut from a larger one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Whole,
    /// Minutes and seconds without the hour.
    TimeSlice,
    /// A day period alone.
    DayPeriodAlone,
}

/// Names in a width ICU4X's field sets do not pair with the rest (narrow names, a long
/// weekday with a numeric date, a long era), and flexible day periods ("in the evening",
/// where ICU4X has them), which field sets do not have: each is written from a one-field
/// pattern and put in place of the part of that type. The three calendars share their
/// weekdays and months, so Gregorian names serve all; eras are rewritten for Gregorian only.
struct NameFix {
    names: FixedCalendarDateTimeNames<Gregorian, CompositeDateTimeFieldSet>,
    patterns: Vec<(&'static str, DateTimePattern)>,
}

/// The formatters of this run, by handle, and the handle of each set of inputs.
#[derive(Default)]
struct Cache {
    entries: Vec<Rc<Entry>>,
    by_key: HashMap<String, u32>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// `dateTimeResolve`: the handle of the formatter for `locale` and `options`, built on the
/// first call with them, and its resolved options.
fn resolve(locale: &str, options: &Options) -> Result<(u32, Resolved), Failure> {
    let key = format!("{locale}\u{0}{options:?}");
    let known = CACHE.with(|cache| {
        let cache = cache.borrow();
        let handle = *cache.by_key.get(&key)?;
        Some((handle, cache.entries.get(handle as usize)?.resolved.clone()))
    });
    if let Some(known) = known {
        return Ok(known);
    }
    let entry = build(locale, options)?;
    let resolved = entry.resolved.clone();
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.entries.len() >= MAX_FORMATTERS {
            return Err(Failure::Range(format!(
                "Intl.DateTimeFormat: a script may make at most {MAX_FORMATTERS} different formats"
            )));
        }
        let handle = cache.entries.len() as u32;
        cache.entries.push(Rc::new(entry));
        cache.by_key.insert(key, handle);
        Ok((handle, resolved))
    })
}

/// The instant a formatter is tried on to read its pattern: a weekday morning in January.
const SAMPLE_INSTANT: f64 = 1_705_314_645_678.0;

fn build(locale: &str, options: &Options) -> Result<Entry, Failure> {
    let (bag, date_style, time_style) = requested(options)?;
    let styled = date_style.is_some() || time_style.is_some();
    let prefs = preferences(locale, options)?;
    let time_zone = options.time_zone.clone().unwrap_or_else(|| "UTC".into());
    let zone = zone_for(&time_zone)?;
    let make = |locale: &Locale, bag: &Bag, long_names: bool| {
        data::formatter(locale, prefs.calendar_kind, field_set(bag, date_style, time_style, long_names))
    };

    // The fields the pattern shows are what `resolvedOptions()` reports, and what the
    // output is compared with.
    let sample = local_instant(&zone, SAMPLE_INSTANT);
    let mut icu_locale = prefs.icu_locale.clone();
    let mut formatter = make(&icu_locale, &bag, false)?;
    let mut fields = pattern_fields(&formatter.format(&sample.zoned).pattern().to_string());

    // ICU4X's weekday-and-hour pattern is a 12-hour one in some 24-hour locales (German
    // `E, h a`): where the locale chose no hour cycle, the one its times use is asked for.
    let hour_symbol = |fields: &[(char, usize)]| fields.iter().find(|(c, _)| matches!(c, 'h' | 'H' | 'k' | 'K')).map(|&(c, _)| c);
    if !styled
        && prefs.own_hour_cycle
        && bag.has_date()
        && let Some(shown) = hour_symbol(&fields)
    {
        let time = Bag { hour: Some(Digits::Numeric), ..Bag::default() };
        let time_fields = pattern_fields(&make(&icu_locale, &time, false)?.format(&sample.zoned).pattern().to_string());
        let twelve = |symbol: char| matches!(symbol, 'h' | 'K');
        if let Some(own) = hour_symbol(&time_fields).filter(|&own| twelve(own) != twelve(shown)) {
            let hour_cycle = match own {
                'h' => "h12",
                'K' => "h11",
                _ => "h23",
            };
            let incorrect = || Failure::Range(format!("Incorrect locale information provided: {locale}"));
            icu_locale = tag_for_icu(&prefs.base, prefs.calendar, Some(hour_cycle), prefs.chosen_numbering_system)
                .ok_or_else(incorrect)?;
            formatter = make(&icu_locale, &bag, false)?;
            fields = pattern_fields(&formatter.format(&sample.zoned).pattern().to_string());
        }
    }

    // Some locales' medium dates have a numeric month (German `dd.MM.y`): a month asked for
    // by name takes the long length, and its names are then written in the width asked for.
    let mut time_glue = None;
    let month_is_number = fields.iter().any(|&(symbol, count)| matches!(symbol, 'M' | 'L') && count < 3);
    if !styled && month_is_number && bag.month_name().is_some() {
        let long = make(&icu_locale, &bag, true)?;
        // The long length joins a date and a time with other words ("um" for "at"), which
        // V8 keeps for long months only: the medium join is put back.
        if bag.has_time() {
            let medium = builder_for(&bag, None, None, false).length;
            if let (Some((medium, true)), Some((long_join, true))) = (
                date_time_join(&icu_locale, prefs.calendar_kind, medium, &sample)?,
                date_time_join(&icu_locale, prefs.calendar_kind, Some(Length::Long), &sample)?,
            ) {
                time_glue = Some((long_join, medium));
            }
        }
        formatter = long;
        fields = pattern_fields(&formatter.format(&sample.zoned).pattern().to_string());
    }
    let count_of = |symbols: &[char]| fields.iter().find(|(symbol, _)| symbols.contains(symbol)).map(|&(_, count)| count);

    // Numeric fields as wide as V8 writes them (for fields asked for as `numeric`).
    let table = numeric_widths(&prefs.icu_locale.id);
    let year_month_day = (bag.year.is_some() || bag.era.is_some()) && bag.day.is_some() && bag.weekday.is_none();
    let numeric_date =
        !styled && year_month_day && bag.month == Some(MonthWidth::Numeric) && count_of(&['M', 'L']).is_some_and(|n| n <= 2);
    let hour_column = match (bag.minute, bag.second) {
        _ if bag.has_date() => 6,
        (_, Some(_)) => 5,
        (Some(Digits::TwoDigit), None) => 4,
        (Some(Digits::Numeric), None) => 3,
        (None, None) => 2,
    };
    let widths = [
        if numeric_date && bag.day == Some(Digits::Numeric) { table[0] } else { 0 },
        if numeric_date { table[1] } else { 0 },
        if !styled && prefs.own_hour_cycle && bag.hour == Some(Digits::Numeric) { table[hour_column] } else { 0 },
    ];
    let two_digit_year =
        !styled && bag.year == Some(Digits::TwoDigit) && prefs.calendar != "japanese" && count_of(&['y']).is_some_and(|n| n != 2);

    // Names in a width the field set's one length could not give: `E` is a name at any
    // length, `c`, `M` and `L` below three are numbers.
    let rewrite = |symbols: &[char], wanted: Option<Text>| -> Option<String> {
        let (symbol, count) = fields.iter().copied().find(|(symbol, _)| symbols.contains(symbol))?;
        let wanted = wanted?.count();
        let is_name = count >= 3 || symbol == 'E';
        (is_name && count.max(3) != wanted).then(|| std::iter::repeat_n(symbol, wanted).collect())
    };
    let mut name_patterns: Vec<(&'static str, String)> = Vec::new();
    if !styled {
        let wanted = [
            ("weekday", &['E', 'c'][..], bag.weekday),
            ("month", &['M', 'L'][..], bag.month_name()),
            ("era", &['G'][..], bag.era.filter(|_| prefs.calendar == "gregory")),
        ];
        name_patterns.extend(wanted.into_iter().filter_map(|(kind, symbols, width)| Some((kind, rewrite(symbols, width)?))));
    }
    // A day period asked for is a flexible one, shown by V8 with a 12-hour clock only, or
    // alone when no other time field is asked for.
    let day_period_alone =
        !styled && bag.day_period.is_some() && bag.hour.is_none() && bag.minute.is_none() && bag.second.is_none();
    if let Some(width) = bag.day_period.filter(|_| !styled && (day_period_alone || count_of(&['a', 'b', 'B']).is_some())) {
        name_patterns.push(("dayPeriod", std::iter::repeat_n('B', width.count()).collect()));
    }
    let names = if name_patterns.is_empty() { None } else { Some(Box::new(data::names(&icu_locale, name_patterns)?)) };
    let rewritten = |kind: &str| names.as_ref().is_some_and(|fix| fix.patterns.iter().any(|(k, _)| *k == kind));

    let shape = if !styled
        && !bag.has_date()
        && bag.hour.is_none()
        && bag.day_period.is_none()
        && (bag.minute.is_some() || bag.second.is_some())
    {
        Shape::TimeSlice
    } else if day_period_alone && !bag.has_date() && rewritten("dayPeriod") {
        Shape::DayPeriodAlone
    } else {
        Shape::Whole
    };

    let zone_glue = if !styled && bag.time_zone_name.is_some() && !bag.has_time() {
        date_time_join(&icu_locale, prefs.calendar_kind, builder_for(&bag, None, None, false).length, &sample)?
    } else {
        None
    };

    // What `resolvedOptions()` reports: the fields shown, in the widths written.
    let mut components = Vec::new();
    let mut hour_cycle = None;
    let mut fractional_second_digits = None;
    let width_name = |count: usize| if count == 2 { "2-digit" } else { "numeric" };
    let text_name = |count: usize| match count {
        4 => "long",
        5 => "narrow",
        _ => "short",
    };
    let numeric = |count: usize, width: u8| width_name(if width == 0 { count } else { usize::from(width) });
    for option in ["weekday", "era", "year", "month", "day", "dayPeriod", "hour", "minute", "second", "timeZoneName"] {
        for &(symbol, count) in &fields {
            let value = match (option, symbol) {
                ("weekday", 'E' | 'c') if count >= 3 || symbol == 'E' => {
                    Some(text_name(if rewritten("weekday") { bag.weekday.map_or(count, Text::count) } else { count }))
                }
                ("era", 'G') => Some(text_name(if rewritten("era") { bag.era.map_or(count, Text::count) } else { count })),
                ("year", 'y' | 'u' | 'r') => {
                    Some(if two_digit_year || (symbol == 'y' && count == 2) { "2-digit" } else { "numeric" })
                }
                ("month", 'M' | 'L') if count <= 2 => Some(numeric(count, widths[1])),
                ("month", 'M' | 'L') => {
                    Some(text_name(if rewritten("month") { bag.month_name().map_or(count, Text::count) } else { count }))
                }
                ("day", 'd') => Some(numeric(count, widths[0])),
                // ICU4X writes flexible day periods where CLDR has them (Chinese), V8 AM/PM:
                // either is reported only when asked for.
                ("dayPeriod", 'a' | 'b' | 'B') => bag.day_period.map(|width| text_name(width.count())),
                ("hour", 'h' | 'H' | 'k' | 'K') => {
                    hour_cycle = Some(match symbol {
                        'h' => "h12",
                        'K' => "h11",
                        'k' => "h24",
                        _ if prefs.h24 => "h24",
                        _ => "h23",
                    });
                    Some(numeric(count, widths[2]))
                }
                ("minute", 'm') | ("second", 's') => Some(width_name(count)),
                ("second", 'S') => {
                    fractional_second_digits = Some(count.min(3) as u8);
                    None
                }
                ("timeZoneName", 'z') => Some(if count == 4 { "long" } else { "short" }),
                ("timeZoneName", 'O' | 'Z' | 'x' | 'X') => Some(if count == 4 { "longOffset" } else { "shortOffset" }),
                ("timeZoneName", 'v' | 'V') => Some(if count == 4 { "longGeneric" } else { "shortGeneric" }),
                _ => None,
            };
            if let Some(value) = value
                && !components.iter().any(|&(name, _)| name == option)
            {
                components.push((option, value));
            }
        }
    }
    if shape != Shape::Whole {
        components.retain(|&(name, _)| match name {
            "minute" => shape == Shape::TimeSlice && bag.minute.is_some(),
            "second" => shape == Shape::TimeSlice && bag.second.is_some(),
            _ => false,
        });
        // V8 writes a minute or a second alone without padding.
        if let [(_, width)] = &mut components[..] {
            *width = "numeric";
        }
        if let (Shape::DayPeriodAlone, Some(width)) = (shape, bag.day_period) {
            components.push(("dayPeriod", text_name(width.count())));
        }
        hour_cycle = None;
        fractional_second_digits = fractional_second_digits.filter(|_| shape == Shape::TimeSlice);
    }
    if styled {
        components.clear();
        fractional_second_digits = None;
    }

    let resolved = Resolved {
        locale: prefs.locale.clone(),
        calendar: prefs.calendar,
        numbering_system: prefs.numbering_system,
        time_zone,
        hour_cycle,
        components,
        fractional_second_digits,
        date_style: date_style.map(Style::name),
        time_style: time_style.map(Style::name),
    };
    Ok(Entry {
        resolved,
        formatter,
        zone,
        digits: prefs.digits,
        h24: prefs.h24,
        widths,
        two_digit_year,
        drop_era: bag.era.is_none() && count_of(&['G']).is_none(),
        names,
        shape,
        zone_glue,
        time_glue,
    })
}

/// The fields of a UTS 35 pattern, as `(symbol, count)`; quoted text is skipped.
fn pattern_fields(pattern: &str) -> Vec<(char, usize)> {
    let mut fields: Vec<(char, usize)> = Vec::new();
    let mut quoted = false;
    let mut previous = None;
    for c in pattern.chars() {
        if c == '\'' {
            quoted = !quoted;
            previous = None;
        } else if !quoted && c.is_ascii_alphabetic() {
            match fields.last_mut() {
                Some((symbol, count)) if previous == Some(c) && *symbol == c => *count += 1,
                _ => fields.push((c, 1)),
            }
            previous = Some(c);
        } else {
            previous = None;
        }
    }
    fields
}

/// The parts a formatter writes for the sample instant.
fn sample_parts(formatter: &DateTimeFormatter<CompositeFieldSet>, sample: &LocalInstant) -> Vec<(&'static str, String)> {
    let mut sink = PartsSink::default();
    // Writing to memory does not fail.
    let _ = formatter.format(&sample.zoned).write_to_parts(&mut sink);
    sink.parts
}

/// Where the date and the time of `parts` meet: the range of the text between them, and
/// whether the time comes after the date.
fn glue_range(parts: &[(&'static str, String)]) -> Option<(Range<usize>, bool)> {
    let is_date = |kind: &str| matches!(kind, "weekday" | "era" | "year" | "relatedYear" | "yearName" | "month" | "day");
    let is_time = |kind: &str| matches!(kind, "hour" | "minute" | "second" | "fractionalSecond" | "dayPeriod" | "timeZoneName");
    let first_time = parts.iter().position(|(kind, _)| is_time(kind))?;
    let first_date = parts.iter().position(|(kind, _)| is_date(kind))?;
    let (last, next, after) = if first_date < first_time {
        (parts[..first_time].iter().rposition(|(kind, _)| is_date(kind))?, first_time, true)
    } else {
        (parts[..first_date].iter().rposition(|(kind, _)| is_time(kind))?, first_date, false)
    };
    let range = last + 1..next;
    parts[range.clone()].iter().all(|(kind, _)| *kind == "literal").then_some((range, after))
}

/// The text ICU4X joins a date and a time with at `length` (what V8 joins a date and a zone
/// name with), and whether the time comes after the date: read from a date with a time,
/// less the date's own text at that end, read from the date alone.
fn date_time_join(
    locale: &Locale,
    calendar: AnyCalendarKind,
    length: Option<Length>,
    sample: &LocalInstant,
) -> Result<Option<(String, bool)>, Failure> {
    let probe = |with_time: bool| {
        let mut builder = FieldSetBuilder::new();
        builder.length = length;
        builder.date_fields = Some(DateFields::YMD);
        builder.time_precision = with_time.then_some(TimePrecision::Minute);
        data::formatter(locale, calendar, build_field_set(builder))
    };
    let parts = sample_parts(&probe(true)?, sample);
    let Some((range, after)) = glue_range(&parts) else { return Ok(None) };
    let between: String = parts[range].iter().map(|(_, text)| text.as_str()).collect();
    let date = sample_parts(&probe(false)?, sample);
    let edge = match if after { date.last() } else { date.first() } {
        Some(("literal", text)) => text.as_str(),
        _ => "",
    };
    let join = if after { between.strip_prefix(edge) } else { between.strip_suffix(edge) };
    Ok(join.map(|join| (join.to_string(), after)))
}

/// Where V8's numeric fields are wider or narrower than ICU4X's: the width (1 or 2; 0 for
/// "as ICU4X has it") V8 gives a field asked for as `numeric`. `[day, month]` of a
/// year-month-day date; then the hour (in the locale's own hour cycle) alone, with a
/// `numeric` minute, with a `2-digit` minute, with minutes and seconds, and with a date.
/// V8 takes its patterns from CLDR's flexible formats and fits the fields to the options
/// (`yMd` is `d.M.y` in German), ICU4X from the standard lengths (`dd.MM.yy`). Looked up as
/// [`super::lookup_tags`] orders the tags. Found by comparing the two over the CLDR locales; kept for the shipped
/// languages only (a test checks).
#[rustfmt::skip]
const NUMERIC_WIDTHS: &[(&str, [u8; 7])] = &[
    ("ar-MA", [0, 0, 0, 0, 1, 0, 0]), ("cs", [1, 1, 0, 0, 0, 0, 0]), ("da", [1, 1, 0, 0, 1, 0, 0]),
    ("de", [1, 1, 0, 0, 1, 0, 0]), ("en-150", [0, 0, 0, 0, 1, 0, 0]), ("en-BE", [1, 1, 0, 0, 1, 0, 0]),
    ("en-CH", [0, 0, 0, 0, 1, 0, 0]), ("en-DE", [0, 0, 0, 0, 1, 0, 0]), ("en-GB", [0, 0, 0, 0, 1, 0, 0]),
    ("en-IE", [1, 1, 0, 0, 1, 0, 0]), ("en-IN", [1, 1, 0, 0, 0, 0, 0]), ("en-KE", [0, 0, 0, 0, 1, 0, 0]),
    ("en-NG", [0, 0, 0, 0, 1, 0, 0]), ("en-NL", [0, 0, 0, 0, 1, 0, 0]), ("en-SE", [0, 0, 0, 0, 1, 0, 0]),
    ("en-ZA", [0, 0, 0, 0, 1, 0, 0]), ("es", [0, 0, 1, 1, 1, 1, 1]), ("es-419", [0, 0, 0, 0, 0, 0, 0]),
    ("es-AR", [0, 0, 1, 1, 1, 0, 0]), ("es-CO", [0, 1, 0, 0, 0, 0, 0]), ("es-CR", [0, 0, 0, 0, 0, 0, 0]),
    ("es-DO", [0, 0, 0, 0, 0, 0, 0]), ("es-EC", [0, 0, 0, 0, 0, 0, 0]), ("es-GT", [0, 1, 0, 0, 0, 0, 0]),
    ("es-MX", [1, 1, 1, 1, 1, 1, 1]), ("es-PE", [0, 1, 0, 0, 0, 0, 0]), ("es-PR", [0, 0, 0, 0, 0, 0, 0]),
    ("es-US", [0, 0, 0, 0, 0, 0, 0]), ("es-VE", [0, 0, 0, 0, 0, 0, 0]), ("fr", [0, 0, 0, 0, 1, 0, 0]),
    ("fr-BE", [2, 0, 0, 0, 1, 0, 0]), ("id", [1, 1, 0, 0, 1, 0, 0]), ("it", [0, 0, 1, 0, 1, 0, 0]),
    ("ja", [1, 1, 0, 0, 0, 0, 0]), ("nb", [1, 1, 0, 0, 1, 0, 0]), ("nl", [1, 1, 0, 0, 1, 0, 0]),
    ("nl-BE", [0, 1, 0, 0, 1, 0, 0]), ("no", [1, 1, 0, 0, 1, 0, 0]), ("pl", [1, 0, 0, 0, 1, 0, 0]),
    ("pt", [0, 0, 0, 0, 1, 0, 0]), ("ro", [0, 0, 0, 0, 1, 0, 0]), ("ru", [0, 0, 1, 0, 1, 0, 0]),
    ("sv", [0, 0, 0, 0, 1, 0, 0]), ("sv-FI", [1, 1, 1, 0, 1, 0, 0]), ("th", [0, 0, 0, 0, 1, 0, 0]),
    ("tr", [2, 0, 0, 0, 1, 0, 0]), ("uk", [0, 0, 1, 0, 1, 0, 0]), ("vi", [1, 1, 0, 1, 1, 0, 0]),
    ("zh", [0, 0, 0, 0, 1, 0, 0]), ("zh-HK", [0, 0, 0, 0, 0, 0, 0]), ("zh-Hant", [0, 0, 0, 0, 0, 0, 0]),
    ("zh-MO", [0, 0, 0, 0, 0, 0, 0]), ("zh-SG", [1, 1, 0, 0, 0, 0, 0]), ("zh-TW", [0, 0, 0, 0, 0, 0, 0]),
];

/// The [`NUMERIC_WIDTHS`] entry for a locale.
fn numeric_widths(id: &LanguageIdentifier) -> [u8; 7] {
    super::lookup_tags(id)
        .iter()
        .find_map(|tag| NUMERIC_WIDTHS.iter().find(|(t, _)| t == tag).map(|&(_, widths)| widths))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// Time zones.

/// Where a formatter takes the local time from.
#[derive(Debug, Clone)]
enum Zone {
    /// An IANA zone: its rules, and the CLDR id its names are keyed by.
    Named { rules: jiff::tz::TimeZone, id: TimeZone },
    /// A fixed offset, in seconds east of UTC (`timeZone: "+05:30"`).
    Fixed(i32),
}

/// The tz database the zone rules come from: the copy built into the artefact, whatever
/// the host has.
fn tz_database() -> jiff::tz::TimeZoneDatabase {
    jiff::tz::TimeZoneDatabase::bundled()
}

/// `+HH:MM`, `+HHMM` or `+HH` (`-` west of UTC) in seconds east of UTC: ECMA-262's
/// UTCOffset without seconds, the offsets a `timeZone` may be.
fn parse_offset(text: &str) -> Option<i32> {
    let (sign, rest) = match text.as_bytes() {
        [b'+', rest @ ..] => (1, rest),
        [b'-', rest @ ..] => (-1, rest),
        _ => return None,
    };
    let two = |pair: &[u8]| match pair {
        [a @ b'0'..=b'9', b @ b'0'..=b'9'] => Some(i32::from(a - b'0') * 10 + i32::from(b - b'0')),
        _ => None,
    };
    let (hours, minutes) = match rest {
        [_, _] => (two(rest)?, 0),
        [h0, h1, m0, m1] => (two(&[*h0, *h1])?, two(&[*m0, *m1])?),
        [h0, h1, b':', m0, m1] => (two(&[*h0, *h1])?, two(&[*m0, *m1])?),
        _ => return None,
    };
    (hours <= 23 && minutes <= 59).then_some(sign * (hours * 3600 + minutes * 60))
}

/// An offset as ECMA-402 names the zone: `+05:30`, `-08:00`, `+00:00`.
fn offset_name(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// Zones V8 (Node 20, with ICU's CLDR data) names by an older or linked name than the IANA
/// database's primary one.
const V8_ZONE_NAMES: [(&str, &str); 23] = [
    ("Africa/Asmara", "Africa/Asmera"),
    ("America/Argentina/Buenos_Aires", "America/Buenos_Aires"),
    ("America/Argentina/Catamarca", "America/Catamarca"),
    ("America/Argentina/Cordoba", "America/Cordoba"),
    ("America/Argentina/Jujuy", "America/Jujuy"),
    ("America/Argentina/Mendoza", "America/Mendoza"),
    ("America/Atikokan", "America/Coral_Harbour"),
    ("America/Indiana/Indianapolis", "America/Indianapolis"),
    ("America/Kentucky/Louisville", "America/Louisville"),
    ("America/Nuuk", "America/Godthab"),
    ("Asia/Ho_Chi_Minh", "Asia/Saigon"),
    ("Asia/Kathmandu", "Asia/Katmandu"),
    ("Asia/Kolkata", "Asia/Calcutta"),
    ("Asia/Yangon", "Asia/Rangoon"),
    ("Atlantic/Faroe", "Atlantic/Faeroe"),
    ("CST6CDT", "America/Chicago"),
    ("EST5EDT", "America/New_York"),
    ("Europe/Kyiv", "Europe/Kiev"),
    ("MST7MDT", "America/Denver"),
    ("PST8PDT", "America/Los_Angeles"),
    ("Pacific/Chuuk", "Pacific/Truk"),
    ("Pacific/Kanton", "Pacific/Enderbury"),
    ("Pacific/Pohnpei", "Pacific/Ponape"),
];

/// The name V8 reports for the zone ICU4X names `canonical` (its IANA primary name).
fn v8_zone_name(id: TimeZone, canonical: &str) -> &str {
    if matches!(id.as_str(), "utc" | "gmt") {
        return "UTC";
    }
    V8_ZONE_NAMES.iter().find(|(iana, _)| *iana == canonical).map_or(canonical, |(_, v8)| v8)
}

/// `timeZoneCanonical`: the zone as `resolvedOptions().timeZone` names it: an offset in
/// the standard's form, or an IANA name in the database's own spelling of the name given
/// (ECMA-402 keeps a link's name: `Asia/Calcutta` stays, `america/new_york` becomes
/// `America/New_York`); `None` for anything else.
pub(super) fn canonical_time_zone(name: &str) -> Option<String> {
    if let Some(seconds) = parse_offset(name) {
        return Some(offset_name(seconds));
    }
    if name.eq_ignore_ascii_case("Etc/Unknown") || name.eq_ignore_ascii_case("Factory") {
        return None;
    }
    let database = tz_database();
    if let Some(known) = database.available().find(|known| known.as_str().eq_ignore_ascii_case(name)) {
        return Some(known.as_str().to_string());
    }
    // A name CLDR knows and the database does not: CLDR's canonical one.
    let parser = data::iana_parser_extended().ok()?;
    let parsed = parser.as_borrowed().parse(name);
    (!parsed.time_zone.is_unknown()).then(|| v8_zone_name(parsed.time_zone, parsed.canonical).to_string())
}

/// `timeZones`: what `Intl.supportedValuesOf("timeZone")` lists: one name a zone, sorted.
fn time_zones() -> Vec<String> {
    let Ok(parser) = data::iana_parser_extended() else { return Vec::new() };
    let mut names: Vec<String> =
        parser.as_borrowed().iter().map(|zone| v8_zone_name(zone.time_zone, zone.canonical)).map(str::to_string).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The zone a formatter shows the time in; `name` is as `timeZoneCanonical` gave it.
fn zone_for(name: &str) -> Result<Zone, Failure> {
    if let Some(seconds) = parse_offset(name) {
        return Ok(Zone::Fixed(seconds));
    }
    let invalid = || Failure::Range(format!("Invalid time zone specified: {name}"));
    let rules = tz_database().get(name).map_err(|_| invalid())?;
    let parser = data::iana_parser()?;
    Ok(Zone::Named { rules, id: parser.as_borrowed().parse(name) })
}

/// An instant as ICU4X formats it: the local date and time in a zone, and the zone.
struct LocalInstant {
    zoned: ZonedDateTime<Iso, TimeZoneInfo<models::AtTime>>,
    /// The local hour, 0 to 23.
    hour: u8,
}

const MS_PER_DAY: i64 = 86_400_000;
/// The Rata Die of 1970-01-01 (day 1 is 0001-01-01).
const UNIX_EPOCH_RATA_DIE: i64 = 719_163;

/// The local date and time of `epoch_ms` (a time value, finite and within ±8.64e15) in
/// `zone`. The offset is the tz rules' at the instant; past the years they cover (±9999),
/// the offset at their nearer end.
fn local_instant(zone: &Zone, epoch_ms: f64) -> LocalInstant {
    let ms = epoch_ms.clamp(-8.64e15, 8.64e15).floor() as i64;
    let offset = match zone {
        Zone::Fixed(seconds) => *seconds,
        Zone::Named { rules, .. } => {
            let (min, max) = (jiff::Timestamp::MIN.as_millisecond(), jiff::Timestamp::MAX.as_millisecond());
            let instant = jiff::Timestamp::from_millisecond(ms.clamp(min, max)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            rules.to_offset(instant).seconds()
        }
    };
    let local = ms + i64::from(offset) * 1000;
    let (days, ms_of_day) = (local.div_euclid(MS_PER_DAY), local.rem_euclid(MS_PER_DAY));
    let date = Date::from_rata_die(RataDie::new(UNIX_EPOCH_RATA_DIE + days), Iso);
    let hour = (ms_of_day / 3_600_000) as u8;
    let (minute, second) = ((ms_of_day / 60_000 % 60) as u8, (ms_of_day / 1000 % 60) as u8);
    let time = Time::try_new(hour, minute, second, (ms_of_day % 1000) as u32 * 1_000_000).unwrap_or(Time::start_of_day());
    // ICU4X takes offsets up to ±18 hours, which every rule in the database stays within.
    let utc_offset = UtcOffset::try_from_seconds(offset).ok();
    let info = match zone {
        Zone::Named { id, .. } => id.with_offset(utc_offset),
        Zone::Fixed(_) => TimeZone::UNKNOWN.with_offset(utc_offset),
    };
    LocalInstant { zoned: ZonedDateTime { date, time, zone: info.at_date_time(DateTime { date, time }) }, hour }
}

// ---------------------------------------------------------------------------------------
// Formatting.

/// `dateTimeFormat`: the instant as `formatToParts` pairs; `None` for a handle that no
/// `dateTimeResolve` gave.
fn format_parts(handle: u32, epoch_ms: f64) -> Option<Vec<(&'static str, String)>> {
    let entry = CACHE.with(|cache| cache.borrow().entries.get(handle as usize).cloned())?;
    let instant = local_instant(&entry.zone, epoch_ms);
    let mut sink = PartsSink::default();
    // Writing to memory does not fail.
    let _ = entry.formatter.format(&instant.zoned).write_to_parts(&mut sink);
    let mut parts = sink.parts;

    if let Some((glue, after)) = &entry.zone_glue {
        rejoin_zone(&mut parts, glue, *after);
    }
    if entry.drop_era {
        drop_era(&mut parts);
    }
    if let Some((long, medium)) = &entry.time_glue
        && let Some((range, true)) = glue_range(&parts)
        && let [(_, between)] = &mut parts[range]
        && let Some(closing) = between.strip_suffix(long.as_str())
    {
        *between = format!("{closing}{medium}");
    }
    if let Some(fix) = &entry.names {
        let date = DateTime { date: instant.zoned.date.to_calendar(Gregorian), time: instant.zoned.time };
        let write = |pattern: &DateTimePattern| {
            let formatter = fix.names.with_pattern_unchecked(pattern);
            let formatted = formatter.format(&date);
            // For a name the data lacks, ICU4X writes its fallback (the field's number) and
            // reports it; the date is still right, so the text is kept.
            formatted.try_write_to_string().unwrap_or_else(|(_, lossy)| lossy).into_owned()
        };
        for (kind, pattern) in &fix.patterns {
            if entry.shape == Shape::DayPeriodAlone && *kind == "dayPeriod" {
                parts = vec![("dayPeriod", write(pattern))];
            } else if let Some((_, value)) = parts.iter_mut().find(|(k, _)| k == kind) {
                *value = write(pattern);
            }
        }
    }
    if entry.shape == Shape::TimeSlice {
        let minute = entry.resolved.components.iter().any(|&(name, _)| name == "minute");
        time_slice(&mut parts, minute, &entry.digits);
    }
    for (kind, value) in &mut parts {
        match *kind {
            "literal" if value.contains('\u{202F}') => *value = value.replace('\u{202F}', " "),
            "hour" if entry.h24 && instant.hour == 0 => *value = [entry.digits[2], entry.digits[4]].iter().collect(),
            "hour" => set_width(value, entry.widths[2], &entry.digits),
            "day" => set_width(value, entry.widths[0], &entry.digits),
            "month" => set_width(value, entry.widths[1], &entry.digits),
            "year" if entry.two_digit_year => {
                let digits: Vec<char> = value.chars().collect();
                if digits.len() > 2 && digits.iter().all(|c| entry.digits.contains(c)) {
                    *value = digits[digits.len() - 2..].iter().collect();
                }
            }
            _ => {}
        }
    }
    Some(parts)
}

/// Moves the zone name of a date-and-zone format to where V8 puts it, joined by `glue`.
fn rejoin_zone(parts: &mut Vec<(&'static str, String)>, glue: &str, after: bool) {
    let Some(at) = parts.iter().position(|(kind, _)| *kind == "timeZoneName") else { return };
    let zone = parts.remove(at);
    // The space that set the zone apart goes with it; the date's own text stays.
    let next_to = if at == 0 { Some(0) } else { (at == parts.len()).then(|| at - 1) };
    if let Some(i) = next_to
        && let Some((kind, text)) = parts.get_mut(i)
        && *kind == "literal"
    {
        *text = if i == 0 { text.trim_start() } else { text.trim_end() }.to_string();
        if text.is_empty() {
            parts.remove(i);
        }
    }
    let glue = ("literal", glue.to_string());
    if after {
        parts.extend([glue, zone]);
    } else {
        parts.splice(0..0, [zone, glue]);
    }
}

/// Removes the era, and the space that set it apart.
fn drop_era(parts: &mut Vec<(&'static str, String)>) {
    let Some(at) = parts.iter().position(|(kind, _)| *kind == "era") else { return };
    parts.remove(at);
    let is_space = |text: &str| text.chars().all(char::is_whitespace);
    if at < parts.len() && parts[at].0 == "literal" && is_space(&parts[at].1) {
        parts.remove(at);
    } else if at > 0 && at == parts.len() && parts[at - 1].0 == "literal" {
        let kept = parts[at - 1].1.trim_end().len();
        parts[at - 1].1.truncate(kept);
        if kept == 0 {
            parts.remove(at - 1);
        }
    }
}

/// Keeps the seconds of a time, and its minutes when `minute`, with the text between.
fn time_slice(parts: &mut Vec<(&'static str, String)>, minute: bool, digits: &[char; 10]) {
    let is_kept = |kind: &str| matches!(kind, "second" | "fractionalSecond") || (minute && kind == "minute");
    let (Some(first), Some(last)) = (parts.iter().position(|(k, _)| is_kept(k)), parts.iter().rposition(|(k, _)| is_kept(k)))
    else {
        return;
    };
    parts.truncate(last + 1);
    parts.drain(..first);
    // V8 writes a minute or a second alone without padding.
    if let [(kind, value), rest @ ..] = &mut parts[..]
        && (!minute || rest.is_empty())
        && matches!(*kind, "minute" | "second")
    {
        set_width(value, 1, digits);
    }
}

/// Writes a numeric field one or two digits wide (`width` 0 leaves it).
fn set_width(value: &mut String, width: u8, digits: &[char; 10]) {
    let mut chars = value.chars();
    match (width, chars.next(), chars.next(), chars.next()) {
        (1, Some(first), Some(_), None) if first == digits[0] => {
            value.remove(0);
        }
        (2, Some(only), None, None) if digits.contains(&only) => value.insert(0, digits[0]),
        _ => {}
    }
}

/// Collects ICU4X's annotated output as ECMA-402's flat parts. ICU4X nests the parts of a
/// number inside its field; only the fraction of the seconds becomes a part of its own
/// (`fractionalSecond`, after a `literal` separator).
#[derive(Default)]
struct PartsSink {
    parts: Vec<(&'static str, String)>,
    /// The types of the parts being written, innermost last.
    open: Vec<&'static str>,
    /// Counts the parts begun, so two parts of one type in a row stay apart.
    begun: u32,
    /// The count when the last part was begun.
    last_begun: u32,
}

impl fmt::Write for PartsSink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.is_empty() {
            return Ok(());
        }
        let kind = self.open.last().copied().unwrap_or("literal");
        match self.parts.last_mut() {
            Some((last, text)) if *last == kind && (kind == "literal" || self.last_begun == self.begun) => text.push_str(s),
            _ => {
                self.parts.push((kind, s.to_string()));
                self.last_begun = self.begun;
            }
        }
        Ok(())
    }
}

impl PartsWrite for PartsSink {
    type SubPartsWrite = Self;

    fn with_part(&mut self, part: Part, mut f: impl FnMut(&mut Self) -> fmt::Result) -> fmt::Result {
        let outer = self.open.last().copied().unwrap_or("literal");
        let kind = match (part.category, part.value, outer) {
            ("datetime", value, _) => match value {
                "era" => "era",
                "year" | "extendedYear" => "year",
                "relatedYear" => "relatedYear",
                "yearName" => "yearName",
                "month" => "month",
                "day" => "day",
                "weekday" => "weekday",
                "dayPeriod" => "dayPeriod",
                "hour" => "hour",
                "minute" => "minute",
                "second" => "second",
                "timeZoneName" => "timeZoneName",
                _ => "literal",
            },
            ("decimal", "fraction", "second") => "fractionalSecond",
            ("decimal", "decimal", "second") => "literal",
            _ => outer,
        };
        let begins = kind != outer;
        if begins {
            self.begun += 1;
        }
        self.open.push(kind);
        let result = f(self);
        self.open.pop();
        if begins {
            // What follows in the outer part is not the same part as what came before.
            self.begun += 1;
        }
        result
    }
}

// ---------------------------------------------------------------------------------------
// Data: every ICU4X constructor that loads data is in this module, so that moving from the
// compiled data to a provider of our own is a change here alone (each `try_new`, `new`
// and `include_*` becomes its `*_unstable` form taking the provider).
mod data {
    use super::super::DATA;
    use super::*;

    fn failed(what: &str, locale: &impl fmt::Display, error: impl fmt::Display) -> Failure {
        Failure::Range(format!("Intl.DateTimeFormat: no {what} data for {locale}: {error}"))
    }

    /// The date-time formatter for a field set in one of the three calendars; `locale`
    /// carries the hour cycle and numbering system as `-u-` keys.
    pub(super) fn formatter(
        locale: &Locale,
        calendar: AnyCalendarKind,
        field_set: CompositeFieldSet,
    ) -> Result<DateTimeFormatter<CompositeFieldSet>, Failure> {
        let prefs = DateTimeFormatterPreferences::from(locale);
        let failed = |error: &dyn fmt::Display| failed("date format", locale, error);
        // Built for one calendar (so only that calendar's data is read), then made to take
        // any date. ICU4X loads the number formatter only when the pattern it loads names
        // for has a number, which is not always the pattern it formats with (Portuguese
        // `MMMM 'de' y`): it is loaded whatever the pattern.
        macro_rules! in_calendar {
            ($calendar:ty, $value:expr) => {{
                let formatter =
                    FixedCalendarDateTimeFormatter::<$calendar, CompositeFieldSet>::try_new_unstable(DATA, prefs, field_set)
                        .map_err(|e| failed(&e))?;
                let mut names = FixedCalendarDateTimeNames::from_formatter(prefs, formatter);
                names.load_decimal_formatter(DATA).map_err(|e| failed(&e))?;
                // The same holds for AM/PM: they are loaded if the pattern read had none
                // (a pattern with them in another width keeps its own).
                let _ = names.load_day_period_names(DATA, DayPeriodNameLength::Abbreviated);
                names.try_into_formatter_unstable(DATA, field_set).map_err(|(e, _)| failed(&e))?.into_formatter($value)
            }};
        }
        Ok(match calendar {
            AnyCalendarKind::Buddhist => in_calendar!(Buddhist, Buddhist),
            AnyCalendarKind::Japanese => in_calendar!(Japanese, Japanese::try_new_unstable(DATA).map_err(|e| failed(&e))?),
            _ => in_calendar!(Gregorian, Gregorian),
        })
    }

    /// The names for the one-field patterns of a [`NameFix`].
    pub(super) fn names(locale: &Locale, patterns: Vec<(&'static str, String)>) -> Result<NameFix, Failure> {
        let mut names = FixedCalendarDateTimeNames::new_without_number_formatting(DateTimeFormatterPreferences::from(locale));
        let mut parsed = Vec::with_capacity(patterns.len());
        for (kind, text) in patterns {
            let pattern = DateTimePattern::try_from_pattern_str(&text).map_err(|e| failed("name", locale, e))?;
            names.load_for_pattern(DATA, &pattern).map_err(|e| failed("name", locale, e))?;
            parsed.push((kind, pattern));
        }
        Ok(NameFix { names, patterns: parsed })
    }

    /// The ten digits of the locale's numbering system, zero first.
    pub(super) fn digits(locale: &Locale) -> Result<[char; 10], Failure> {
        let formatter = DecimalFormatter::try_new_unstable(DATA, DecimalFormatterPreferences::from(locale), Default::default())
            .map_err(|e| failed("number", locale, e))?;
        let mut digits = ['0'; 10];
        for (n, digit) in (0u8..).zip(digits.iter_mut()) {
            let text = formatter.format(&Decimal::from(n)).to_string();
            *digit = text.chars().next().unwrap_or(char::from(b'0' + n));
        }
        Ok(digits)
    }

    /// The calendar a locale uses when it names none.
    pub(super) fn default_calendar(id: &LanguageIdentifier) -> AnyCalendarKind {
        AnyCalendarKind::try_new_unstable(DATA, CalendarPreferences::from(id)).unwrap_or(AnyCalendarKind::Gregorian)
    }

    /// IANA names to the CLDR ids ICU4X's zone names are keyed by.
    pub(super) fn iana_parser() -> Result<IanaParser, Failure> {
        IanaParser::try_new_unstable(DATA).map_err(|e| failed("time zone", &"und", e))
    }

    /// The same, with the primary and case-normalized IANA names.
    pub(super) fn iana_parser_extended() -> Result<IanaParserExtended<IanaParser>, Failure> {
        IanaParserExtended::try_new_unstable(DATA).map_err(|e| failed("time zone", &"und", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Formats `epoch_ms` with the options given as `name=value` pairs.
    fn format(locale: &str, options: &[(&str, &str)], epoch_ms: f64) -> Result<String, Failure> {
        let mut o = Options::default();
        for &(name, value) in options {
            let text = Some(value.to_string());
            match name {
                "calendar" => o.calendar = text,
                "numberingSystem" => o.numbering_system = text,
                "hour12" => o.hour12 = Some(value == "true"),
                "hourCycle" => o.hour_cycle = text,
                "timeZone" => o.time_zone = text,
                "weekday" => o.weekday = text,
                "era" => o.era = text,
                "year" => o.year = text,
                "month" => o.month = text,
                "day" => o.day = text,
                "dayPeriod" => o.day_period = text,
                "hour" => o.hour = text,
                "minute" => o.minute = text,
                "second" => o.second = text,
                "fractionalSecondDigits" => o.fractional_second_digits = value.parse().ok(),
                "timeZoneName" => o.time_zone_name = text,
                "dateStyle" => o.date_style = text,
                "timeStyle" => o.time_style = text,
                "defaults" => o.defaults = text,
                _ => panic!("no option {name}"),
            }
        }
        let (handle, _) = resolve(locale, &o)?;
        let parts = format_parts(handle, epoch_ms).expect("a handle resolve gave");
        Ok(parts.iter().map(|(_, text)| text.as_str()).collect())
    }

    /// 2024-01-05T14:05:07.123Z, a Friday.
    const FRIDAY: f64 = 1_704_463_507_123.0;

    /// A locale, options, and what Node 20 writes.
    type Case = (&'static str, &'static [(&'static str, &'static str)], &'static str);

    #[test]
    fn numeric_widths_are_kept_for_shipped_languages_only() {
        for (tag, _) in NUMERIC_WIDTHS {
            let language = tag.split('-').next().unwrap();
            assert!(super::super::SHIPPED_LANGUAGES.contains(&language), "{tag} is not a shipped language");
        }
    }

    #[test]
    fn formats_as_node_does() {
        let cases: &[Case] = &[
            ("en-US", &[], "1/5/2024"),
            ("de-DE", &[], "5.1.2024"),
            ("de-DE", &[("month", "short")], "Jan"),
            ("de-DE", &[("year", "numeric"), ("month", "short"), ("day", "numeric")], "5. Jan. 2024"),
            ("en-US", &[("dateStyle", "medium")], "Jan 5, 2024"),
            (
                "en-US",
                &[("dateStyle", "full"), ("timeStyle", "long"), ("timeZone", "America/New_York")],
                "Friday, January 5, 2024 at 9:05:07 AM EST",
            ),
            (
                "en-US",
                &[("weekday", "long"), ("year", "numeric"), ("month", "long"), ("day", "numeric")],
                "Friday, January 5, 2024",
            ),
            ("en-US", &[("hour", "2-digit"), ("minute", "2-digit"), ("defaults", "time")], "02:05 PM"),
            ("en-US", &[("hour12", "false"), ("defaults", "time")], "14:05:07"),
            ("en-GB", &[("defaults", "all")], "05/01/2024, 14:05:07"),
            ("ja-JP", &[("defaults", "all")], "2024/1/5 14:05:07"),
            ("zh-CN", &[("dateStyle", "full")], "2024年1月5日星期五"),
            (
                "fr-FR",
                &[("weekday", "long"), ("day", "numeric"), ("month", "long"), ("year", "numeric")],
                "vendredi 5 janvier 2024",
            ),
            ("en-US", &[("timeZoneName", "short"), ("timeZone", "America/Los_Angeles")], "1/5/2024, PST"),
            ("th-TH", &[], "5/1/2567"),
            ("ja-JP-u-ca-japanese", &[], "R6/1/5"),
            ("ar-EG", &[], "٥\u{200F}/١\u{200F}/٢٠٢٤"),
            ("en-US", &[("month", "narrow")], "J"),
            ("en-US", &[("weekday", "long"), ("month", "numeric"), ("day", "numeric")], "Friday, 1/5"),
            ("en-US", &[("year", "2-digit"), ("month", "short")], "Jan 24"),
            ("en-US", &[("era", "long")], "1/5/2024 Anno Domini"),
            ("en-US", &[("minute", "2-digit"), ("second", "2-digit")], "05:07"),
            (
                "en-US",
                &[("hour", "numeric"), ("minute", "2-digit"), ("second", "2-digit"), ("fractionalSecondDigits", "3")],
                "2:05:07.123 PM",
            ),
            ("en-US", &[("hour", "numeric"), ("hourCycle", "h24"), ("timeZone", "UTC")], "24"),
        ];
        for &(locale, options, expected) in cases {
            let epoch = if options.contains(&("hourCycle", "h24")) { 1_704_412_800_000.0 } else { FRIDAY };
            assert_eq!(format(locale, options, epoch).as_deref(), Ok(expected), "{locale} {options:?}");
        }
    }

    #[test]
    fn a_locale_without_data_falls_back() {
        for locale in ["sw-KE", "xx-Latn-XX"] {
            let formatted = format(locale, &[("dateStyle", "long")], FRIDAY).expect("formats");
            assert!(formatted.contains("2024"), "{locale}: {formatted}");
        }
    }

    #[test]
    fn far_instants_and_zones() {
        assert_eq!(format("en-US", &[], -62_135_596_800_000.0).as_deref(), Ok("1/1/1"));
        assert_eq!(format("en-US", &[], 8.64e15).as_deref(), Ok("9/13/275760"));
        assert_eq!(format("en-US", &[], -8.64e15).as_deref(), Ok("4/20/271822"));
        let summer = [("timeZone", "Europe/Berlin"), ("timeZoneName", "short"), ("hour", "numeric")];
        assert_eq!(format("de", &summer, 1_719_835_507_890.0).as_deref(), Ok("14 Uhr MESZ"));
        let offset = [("timeZone", "+05:30"), ("timeZoneName", "short"), ("hour", "numeric"), ("minute", "numeric")];
        assert_eq!(format("en-US", &offset, FRIDAY).as_deref(), Ok("7:35 PM GMT+5:30"));
    }

    #[test]
    fn resolves_options_as_v8_does() {
        let resolved = |locale: &str, options: Options| resolve(locale, &options).map(|(_, resolved)| resolved);
        let de = resolved("de-DE", Options::default()).expect("de-DE");
        assert_eq!(de.components, [("year", "numeric"), ("month", "numeric"), ("day", "numeric")]);
        assert_eq!((de.calendar, de.numbering_system, de.time_zone.as_str()), ("gregory", "latn", "UTC"));
        let hc = Options { hour: Some("numeric".into()), ..Options::default() };
        let h23 = resolved("en-US-u-hc-h23-co-phonebk", hc.clone()).expect("h23");
        assert_eq!((h23.locale.as_str(), h23.hour_cycle), ("en-US-u-hc-h23", Some("h23")));
        let h12 = resolved("en-US-u-hc-h23", Options { hour12: Some(true), ..hc }).expect("h12");
        assert_eq!((h12.locale.as_str(), h12.hour_cycle), ("en-US", Some("h12")));
        let thai = resolved("th-TH", Options::default()).expect("th-TH");
        assert_eq!(thai.calendar, "buddhist");
        let hebrew = resolved("en-US-u-ca-hebrew", Options { numbering_system: Some("arab".into()), ..Options::default() });
        let hebrew = hebrew.expect("hebrew");
        assert_eq!((hebrew.locale.as_str(), hebrew.calendar, hebrew.numbering_system), ("en-US", "gregory", "arab"));
        let styled = Options { date_style: Some("short".into()), year: Some("numeric".into()), ..Options::default() };
        assert!(matches!(resolve("en", &styled), Err(Failure::Type(_))));
        let no_zone = Options { time_zone: Some("Mars/Olympus".into()), ..Options::default() };
        assert!(matches!(resolve("en", &no_zone), Err(Failure::Range(_))));
    }

    #[test]
    fn time_zone_names_keep_the_name_given() {
        for (name, canonical) in [
            ("america/new_york", Some("America/New_York")),
            ("utc", Some("UTC")),
            ("Etc/GMT", Some("Etc/GMT")),
            ("Asia/Kolkata", Some("Asia/Kolkata")),
            ("asia/calcutta", Some("Asia/Calcutta")),
            ("US/Eastern", Some("US/Eastern")),
            ("+0530", Some("+05:30")),
            ("-08", Some("-08:00")),
            ("-00:00", Some("+00:00")),
            ("+24:00", None),
            ("Mars/Olympus", None),
            ("Etc/Unknown", None),
        ] {
            assert_eq!(canonical_time_zone(name).as_deref(), canonical, "{name}");
        }
        let zones = time_zones();
        assert!(zones.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(zones.iter().all(|zone| matches!(zone_for(zone), Ok(Zone::Named { id, .. }) if !id.is_unknown())));
    }
}
