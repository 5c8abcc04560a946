//! Exports the ICU4X data that the guest's `Intl` implementation carries, as baked Rust code.
//!
//! The guest is built without ICU4X's `compiled_data` features, which would embed the data
//! for every CLDR locale; instead it includes the baked data written by this tool: only the
//! data markers the guest's `Intl` uses ([`MARKERS`]) and only a chosen subset of locales
//! ([`LOCALE_FAMILIES`]). Other locales fall back to their parents and finally to the root.
//!
//! The source is ICU4X's own compiled data, not CLDR: the CLDR JSON packages on npm are
//! older than the CLDR release ICU4X 2.4 is built against, so regenerating from them would
//! not give ICU4X the data it expects. The compiled-data crates (`icu_*_data`) ship their
//! data as macros implementing `DataProvider` for a given type; `build.rs` prepares them,
//! this file implements them on [`Baked`], and ICU4X's exporter reads them back through
//! that provider, keeps the chosen markers and locales, deduplicates what fallback already
//! supplies, and writes a smaller baked provider.
//!
//! Usage: `intl-data [--keep-cjk-collation] <output directory>`, normally through
//! `scripts/export-intl-data`. The output directory is replaced.

extern crate alloc;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use icu::locale::fallback::LocaleFallbacker;
use icu::locale::subtags::{Language, Script, language, script};
use icu_provider::prelude::*;
use icu_provider::{DataMarkerInfo, IterableDataProvider};
use icu_provider_export::baked_exporter::{BakedExporter, Options};
use icu_provider_export::{DataLocaleFamily, DeduplicationStrategy, ExportDriver};

/// The locales whose data is exported, as ICU4X locale families.
///
/// Each language comes with its regional and script forms (`en` brings `en-GB`, `en-IN`,
/// ...; `zh` brings `zh-Hant` and `zh-TW`), whose numbers, dates and lists differ; `@und`
/// is the root locale alone (a bare `und` would mean every locale). Locales not listed
/// here resolve through the usual fallback chain, ending at the root (for example `sw-KE`
/// gets root data), except for display names (`LocaleNames*`), which have no root data: there they find nothing.
const LOCALE_FAMILIES: &[&str] = &[
    "@und", "en", "de", "fr", "es", "it", "pt", "nl", "sv", "da", "nb", "fi", "pl", "cs", "ru", "uk", "tr", "ar", "he", "hi", "ja",
    "zh", "ko", "th", "id", "vi", "el", "hu", "ro",
];

/// Whether to leave out the Chinese and Japanese collation tailorings.
///
/// They are by far the largest collation data: the pinyin, stroke, zhuyin and Japanese
/// orders of tens of thousands of Han characters, about two thirds of all the collation
/// tailoring data. Without them, collation for `zh` and `ja` (and for the Han-script root
/// locales `und-Hani`, `und-Hans`, `und-Hant`) is the root collation, which sorts Han
/// characters in code point order. `--keep-cjk-collation` overrides this.
const DROP_CJK_COLLATION: bool = true;

/// The exported data markers, grouped by the `Intl` feature that needs them.
///
/// Each name is the marker type (found in [`markers`]) and also the name of the file that
/// `build.rs` prepared from ICU4X's compiled data for it.
macro_rules! exported_markers {
    ($($marker:ident,)+) => {
        /// Implements every exported marker on [`Baked`] from ICU4X's compiled data, one
        /// module per marker.
        #[allow(non_snake_case, dead_code)]
        mod baked_impls {
            $(
                mod $marker {
                    include!(concat!(env!("OUT_DIR"), "/", stringify!($marker), ".rs"));
                }
            )+
        }

        icu_provider::export::make_exportable_provider!(Exportable, [$(markers::$marker,)+]);

        /// The markers to export.
        const MARKERS: &[DataMarkerInfo] = &[$(<markers::$marker as DataMarker>::INFO,)+];
    };
}

exported_markers! {
    // Calendars (Intl.DateTimeFormat, Intl.Locale week info)
    CalendarJapaneseModernV1, CalendarWeekV1, CalendarPreferredV1,
    // Collation (Intl.Collator, String.prototype.localeCompare)
    CollationRootV1, CollationTailoringV1, CollationDiacriticsV1, CollationJamoV1,
    CollationMetadataV1, CollationReorderingV1, CollationSpecialPrimariesV1,
    // Canonical decomposition, used by the collator
    NormalizerNfdDataV1, NormalizerNfdTablesV1, NormalizerNfdSupplementV1,
    // Time zone names and identifiers (Intl.DateTimeFormat timeZone and timeZoneName)
    TimezoneNamesEssentialsV1, TimezoneNamesSpecificShortV1, TimezoneNamesSpecificLongV1,
    TimezoneNamesGenericShortV1, TimezoneNamesGenericLongV1, TimezoneNamesStandardLongV1,
    TimezoneNamesLocationsRootV1, TimezoneNamesLocationsOverrideV1,
    TimezoneNamesCitiesRootV1, TimezoneNamesCitiesOverrideV1,
    TimezonePeriodsV1, TimezoneIdentifiersIanaCoreV1, TimezoneIdentifiersIanaExtendedV1,
    // Numbers (Intl.NumberFormat)
    DecimalDigitsV1, DecimalSymbolsV1, DecimalCompactLongV1, DecimalCompactShortV1,
    // Lists (Intl.ListFormat)
    ListAndV1, ListOrV1, ListUnitV1,
    // Locale fallback, canonicalisation, likely subtags and text direction (Intl.Locale)
    LocaleLikelySubtagsLanguageV1, LocaleParentsV1, LocaleAliasesV1,
    LocaleLikelySubtagsExtendedV1, LocaleLikelySubtagsScriptRegionV1, LocaleScriptDirectionV1,
    // Plural rules (Intl.PluralRules, and the formatters that pick plural forms)
    PluralsCardinalV1, PluralsOrdinalV1, PluralsRangesV1,
    // Rule-based segmentation (Intl.Segmenter): what GraphemeClusterSegmenter,
    // WordSegmenter::try_new_for_non_complex_scripts and SentenceSegmenter load
    SegmenterBreakGraphemeClusterV1, SegmenterBreakWordV1, SegmenterBreakSentenceV1,
    SegmenterBreakWordOverrideV1, SegmenterBreakSentenceOverrideV1,
    // Dates and times in the Gregorian, Buddhist and Japanese calendars (Intl.DateTimeFormat)
    DatetimeNamesWeekdayV1, DatetimeNamesDayperiodV1,
    DatetimeNamesYearGregorianV1, DatetimeNamesMonthGregorianV1, DatetimePatternsDateGregorianV1,
    DatetimeNamesYearBuddhistV1, DatetimeNamesMonthBuddhistV1, DatetimePatternsDateBuddhistV1,
    DatetimeNamesYearJapaneseV1, DatetimeNamesMonthJapaneseV1, DatetimePatternsDateJapaneseV1,
    DatetimePatternsTimeV1, DatetimePatternsGlueV1,
    // Currencies and percentages (Intl.NumberFormat style "currency" and "percent")
    CurrencyEssentialsV1, CurrencySymbolsV1, CurrencyDecimalSymbolsV1, CurrencyPatternsDataV1,
    CurrencyFractionsV1, CurrencyDisplaynameV1, CurrencyPatternsNoCurrencyV1, DecimalPercentV1,
    // Units (Intl.NumberFormat style "unit")
    UnitsEssentialsV1, UnitsIdV1, UnitsInfoV1, UnitsNamesAreaCoreV1, UnitsNamesDurationCoreV1,
    UnitsNamesLengthCoreV1, UnitsNamesMassCoreV1, UnitsNamesVolumeCoreV1,
    // Relative times (Intl.RelativeTimeFormat)
    DatetimeRelativeSecondLongV1, DatetimeRelativeSecondShortV1, DatetimeRelativeSecondNarrowV1,
    DatetimeRelativeMinuteLongV1, DatetimeRelativeMinuteShortV1, DatetimeRelativeMinuteNarrowV1,
    DatetimeRelativeHourLongV1, DatetimeRelativeHourShortV1, DatetimeRelativeHourNarrowV1,
    DatetimeRelativeDayLongV1, DatetimeRelativeDayShortV1, DatetimeRelativeDayNarrowV1,
    DatetimeRelativeWeekLongV1, DatetimeRelativeWeekShortV1, DatetimeRelativeWeekNarrowV1,
    DatetimeRelativeMonthLongV1, DatetimeRelativeMonthShortV1, DatetimeRelativeMonthNarrowV1,
    DatetimeRelativeQuarterLongV1, DatetimeRelativeQuarterShortV1, DatetimeRelativeQuarterNarrowV1,
    DatetimeRelativeYearLongV1, DatetimeRelativeYearShortV1, DatetimeRelativeYearNarrowV1,
    // Display names of languages, regions, scripts and variants (Intl.DisplayNames)
    LocaleNamesLanguageV0, LocaleNamesRegionV0, LocaleNamesScriptV0, LocaleNamesLocaleV0,
    LocaleNamesVariantV0,
}

/// The modules that define the exported marker types, so that the list above can name
/// them without paths.
mod markers {
    #![allow(ambiguous_glob_reexports, unused_imports)]
    pub use icu::calendar::provider::*;
    pub use icu::collator::provider::*;
    pub use icu::datetime::provider::names::*;
    pub use icu::datetime::provider::semantic_skeletons::*;
    pub use icu::datetime::provider::time_zones::*;
    pub use icu::decimal::provider::*;
    pub use icu::experimental::dimension::provider::currency::displayname::*;
    pub use icu::experimental::dimension::provider::currency::essentials::*;
    pub use icu::experimental::dimension::provider::currency::fractions::*;
    pub use icu::experimental::dimension::provider::currency::no_currency::*;
    pub use icu::experimental::dimension::provider::currency::patterns::*;
    pub use icu::experimental::dimension::provider::currency::symbols::*;
    pub use icu::experimental::dimension::provider::percent::*;
    pub use icu::experimental::dimension::provider::units::categorized_display_names::*;
    pub use icu::experimental::dimension::provider::units::essentials::*;
    pub use icu::experimental::displaynames::provider::*;
    pub use icu::experimental::measure::provider::*;
    pub use icu::experimental::relativetime::provider::*;
    pub use icu::experimental::units::provider::*;
    pub use icu::list::provider::*;
    pub use icu::locale::fallback::provider::*;
    pub use icu::locale::provider::*;
    pub use icu::normalizer::provider::*;
    pub use icu::plurals::provider::*;
    pub use icu::segmenter::provider::*;
    pub use icu::time::provider::iana::*;
    pub use icu::time::provider::*;
}

/// ICU4X's compiled data, for every marker in the list above.
struct Baked;

impl Baked {
    /// The data files check for this constant before implementing anything on a type.
    #[allow(dead_code)]
    pub(crate) const MUST_USE_MAKE_PROVIDER_MACRO: () = ();
}

/// What the exporter reads: [`Baked`], less any data deliberately left out.
struct Exportable {
    drop_cjk_collation: bool,
}

impl Exportable {
    /// Whether the data for `marker` at `locale` is to be left out.
    fn excludes(&self, marker: DataMarkerInfo, locale: &DataLocale) -> bool {
        self.drop_cjk_collation && is_tailored_collation(marker) && is_cjk(locale)
    }
}

/// The collation markers whose data varies by locale (the others are singletons).
fn is_tailored_collation(marker: DataMarkerInfo) -> bool {
    use markers::{CollationDiacriticsV1, CollationMetadataV1, CollationReorderingV1, CollationTailoringV1};
    [CollationTailoringV1::INFO, CollationDiacriticsV1::INFO, CollationMetadataV1::INFO, CollationReorderingV1::INFO]
        .contains(&marker)
}

/// Chinese and Japanese, and the root locales of the Han scripts.
fn is_cjk(locale: &DataLocale) -> bool {
    const LANGUAGES: [Language; 3] = [language!("zh"), language!("ja"), language!("yue")];
    const SCRIPTS: [Script; 4] = [script!("Hani"), script!("Hans"), script!("Hant"), script!("Jpan")];
    LANGUAGES.contains(&locale.language) || (locale.language.is_unknown() && locale.script.is_some_and(|s| SCRIPTS.contains(&s)))
}

impl<M: DataMarker> DataProvider<M> for Exportable
where
    Baked: DataProvider<M>,
{
    fn load(&self, req: DataRequest) -> Result<DataResponse<M>, DataError> {
        if self.excludes(M::INFO, req.id.locale) {
            return Err(DataErrorKind::IdentifierNotFound.with_req(M::INFO, req));
        }
        let response = Baked.load(req)?;
        // Baked data falls back internally; don't let a request reach excluded data that way.
        if let Some(resolved) = &response.metadata.locale
            && self.excludes(M::INFO, resolved)
        {
            return Err(DataErrorKind::IdentifierNotFound.with_req(M::INFO, req));
        }
        Ok(response)
    }
}

impl<M: DataMarker> IterableDataProvider<M> for Exportable
where
    Baked: IterableDataProvider<M>,
{
    fn iter_ids(&self) -> Result<BTreeSet<DataIdentifierCow<'_>>, DataError> {
        let mut ids = IterableDataProvider::<M>::iter_ids(&Baked)?;
        ids.retain(|id| !self.excludes(M::INFO, &id.locale));
        Ok(ids)
    }
}

/// Prints the exporter's warnings and errors.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{}: {}", record.level(), record.args());
        }
    }

    fn flush(&self) {}
}

fn main() -> ExitCode {
    let mut keep_cjk_collation = false;
    let mut out_dir = None;
    for arg in std::env::args_os().skip(1) {
        if arg == "--keep-cjk-collation" {
            keep_cjk_collation = true;
        } else if out_dir.is_none() && !arg.to_string_lossy().starts_with('-') {
            out_dir = Some(PathBuf::from(arg));
        } else {
            eprintln!("usage: intl-data [--keep-cjk-collation] <output directory>");
            return ExitCode::from(2);
        }
    }
    let Some(out_dir) = out_dir else {
        eprintln!("usage: intl-data [--keep-cjk-collation] <output directory>");
        return ExitCode::from(2);
    };
    match export(out_dir, DROP_CJK_COLLATION && !keep_cjk_collation) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn export(out_dir: PathBuf, drop_cjk_collation: bool) -> Result<(), DataError> {
    let _ = log::set_logger(&StderrLogger);
    log::set_max_level(log::LevelFilter::Warn);

    let families = LOCALE_FAMILIES
        .iter()
        .map(|family| {
            family
                .parse::<DataLocaleFamily>()
                .map_err(|_| DataError::custom("invalid locale family").with_display_context(family))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut options = Options::default();
    options.use_internal_fallback = true;
    options.pretty = false;
    options.use_separate_crates = false;
    options.overwrite = true;
    let exporter = BakedExporter::new(out_dir.clone(), options)?;

    ExportDriver::new(families, DeduplicationStrategy::Maximal.into(), LocaleFallbacker::new().static_to_owned())
        .with_markers(MARKERS.iter().copied())
        // Rule-based segmentation only: no dictionary or LSTM models.
        .with_segmenter_models([])
        .export(&Exportable { drop_cjk_collation }, exporter)?;

    std::fs::write(out_dir.join("LICENSE"), license())
        .map_err(|e| DataError::from(e).with_path_context(&out_dir.join("LICENSE")))?;
    Ok(())
}

/// The notice that must accompany the data: the Unicode License v3, as ICU4X ships it.
fn license() -> String {
    let shipped = include_str!(concat!(env!("OUT_DIR"), "/ICU4X-LICENSE"));
    // The file goes on to credit ICU4C and ICU4J for parts of ICU4X's code, which is not
    // what this directory holds; the licence text ends with its SPDX identifier.
    const END: &str = "SPDX-License-Identifier: Unicode-3.0";
    let end = shipped.find(END).map(|i| i + END.len()).expect("Unicode License v3 text");
    format!(
        "The data in this directory is generated from the data that ICU4X ships, which derives\n\
         from the Unicode Common Locale Data Repository (CLDR) and the Unicode Character\n\
         Database. It is distributed under the following licence.\n\n{}\n",
        &shipped[..end]
    )
}
