// @generated
include!("normalizer_nfd_tables_v1.rs.data");
include!("datetime_relative_hour_long_v1.rs.data");
include!("datetime_patterns_date_gregorian_v1.rs.data");
include!("datetime_relative_quarter_long_v1.rs.data");
include!("datetime_patterns_time_v1.rs.data");
include!("normalizer_nfd_supplement_v1.rs.data");
include!("datetime_names_month_gregorian_v1.rs.data");
include!("units_id_v1.rs.data");
include!("datetime_relative_quarter_short_v1.rs.data");
include!("collation_reordering_v1.rs.data");
include!("datetime_relative_week_long_v1.rs.data");
include!("datetime_names_dayperiod_v1.rs.data");
include!("segmenter_break_sentence_v1.rs.data");
include!("datetime_relative_minute_long_v1.rs.data");
include!("collation_diacritics_v1.rs.data");
include!("calendar_preferred_v1.rs.data");
include!("datetime_names_month_buddhist_v1.rs.data");
include!("locale_names_region_v0.rs.data");
include!("datetime_names_weekday_v1.rs.data");
include!("datetime_relative_second_short_v1.rs.data");
include!("datetime_relative_month_narrow_v1.rs.data");
include!("datetime_relative_month_long_v1.rs.data");
include!("plurals_ordinal_v1.rs.data");
include!("currency_displayname_v1.rs.data");
include!("decimal_symbols_v1.rs.data");
include!("currency_patterns_data_v1.rs.data");
include!("datetime_relative_day_long_v1.rs.data");
include!("datetime_relative_second_narrow_v1.rs.data");
include!("datetime_relative_week_narrow_v1.rs.data");
include!("locale_likely_subtags_language_v1.rs.data");
include!("locale_parents_v1.rs.data");
include!("timezone_names_locations_root_v1.rs.data");
include!("datetime_relative_quarter_narrow_v1.rs.data");
include!("datetime_relative_hour_narrow_v1.rs.data");
include!("timezone_names_specific_short_v1.rs.data");
include!("datetime_relative_year_long_v1.rs.data");
include!("datetime_patterns_glue_v1.rs.data");
include!("datetime_relative_minute_short_v1.rs.data");
include!("timezone_identifiers_iana_extended_v1.rs.data");
include!("currency_patterns_no_currency_v1.rs.data");
include!("datetime_relative_hour_short_v1.rs.data");
include!("locale_aliases_v1.rs.data");
include!("timezone_names_cities_root_v1.rs.data");
include!("collation_jamo_v1.rs.data");
include!("segmenter_break_grapheme_cluster_v1.rs.data");
include!("units_names_length_core_v1.rs.data");
include!("datetime_relative_week_short_v1.rs.data");
include!("units_names_area_core_v1.rs.data");
include!("units_essentials_v1.rs.data");
include!("datetime_relative_day_narrow_v1.rs.data");
include!("collation_metadata_v1.rs.data");
include!("plurals_cardinal_v1.rs.data");
include!("datetime_relative_day_short_v1.rs.data");
include!("units_names_mass_core_v1.rs.data");
include!("list_or_v1.rs.data");
include!("timezone_names_generic_short_v1.rs.data");
include!("list_and_v1.rs.data");
include!("datetime_names_year_buddhist_v1.rs.data");
include!("locale_names_language_v0.rs.data");
include!("timezone_names_specific_long_v1.rs.data");
include!("plurals_ranges_v1.rs.data");
include!("collation_tailoring_v1.rs.data");
include!("decimal_digits_v1.rs.data");
include!("currency_essentials_v1.rs.data");
include!("locale_names_script_v0.rs.data");
include!("calendar_japanese_modern_v1.rs.data");
include!("timezone_names_essentials_v1.rs.data");
include!("currency_decimal_symbols_v1.rs.data");
include!("calendar_week_v1.rs.data");
include!("timezone_names_cities_override_v1.rs.data");
include!("timezone_periods_v1.rs.data");
include!("datetime_patterns_date_japanese_v1.rs.data");
include!("datetime_relative_month_short_v1.rs.data");
include!("locale_names_locale_v0.rs.data");
include!("datetime_relative_second_long_v1.rs.data");
include!("locale_names_variant_v0.rs.data");
include!("timezone_names_generic_long_v1.rs.data");
include!("list_unit_v1.rs.data");
include!("collation_special_primaries_v1.rs.data");
include!("normalizer_nfd_data_v1.rs.data");
include!("timezone_identifiers_iana_core_v1.rs.data");
include!("decimal_compact_short_v1.rs.data");
include!("segmenter_break_word_v1.rs.data");
include!("datetime_patterns_date_buddhist_v1.rs.data");
include!("timezone_names_standard_long_v1.rs.data");
include!("datetime_relative_year_narrow_v1.rs.data");
include!("units_names_volume_core_v1.rs.data");
include!("datetime_names_month_japanese_v1.rs.data");
include!("currency_symbols_v1.rs.data");
include!("locale_likely_subtags_extended_v1.rs.data");
include!("datetime_relative_year_short_v1.rs.data");
include!("decimal_compact_long_v1.rs.data");
include!("locale_script_direction_v1.rs.data");
include!("datetime_names_year_gregorian_v1.rs.data");
include!("segmenter_break_word_override_v1.rs.data");
include!("segmenter_break_sentence_override_v1.rs.data");
include!("collation_root_v1.rs.data");
include!("units_names_duration_core_v1.rs.data");
include!("currency_fractions_v1.rs.data");
include!("units_info_v1.rs.data");
include!("timezone_names_locations_override_v1.rs.data");
include!("datetime_relative_minute_narrow_v1.rs.data");
include!("decimal_percent_v1.rs.data");
include!("locale_likely_subtags_script_region_v1.rs.data");
include!("datetime_names_year_japanese_v1.rs.data");
#[doc = r" Marks a type as a data provider. You can then use macros like"]
#[doc = r" `impl_core_helloworld_v1` to add implementations."]
#[doc = r""]
#[doc = r" ```ignore"]
#[doc = r" struct MyProvider;"]
#[doc = r" const _: () = {"]
#[doc = r#"     include!("path/to/generated/macros.rs");"#]
#[doc = r"     make_provider!(MyProvider);"]
#[doc = r"     impl_core_helloworld_v1!(MyProvider);"]
#[doc = r" }"]
#[doc = r" ```"]
#[doc(hidden)]
#[macro_export]
macro_rules! __make_provider {
    ($ name : ty) => {
        #[clippy::msrv = "1.88"]
        impl $name {
            #[allow(dead_code)]
            pub(crate) const MUST_USE_MAKE_PROVIDER_MACRO: () = ();
        }
        icu_provider::marker::impl_data_provider_never_marker!($name);
    };
}
#[doc(inline)]
pub use __make_provider as make_provider;
#[doc = r" This macro requires the following crates:"]
#[doc = " * `alloc`"]
#[doc = " * `icu`"]
#[doc = " * `icu_locale_core`"]
#[doc = " * `icu_pattern`"]
#[doc = " * `icu_provider`"]
#[doc = " * `icu_provider/baked`"]
#[doc = " * `zerotrie`"]
#[doc = " * `zerovec`"]
#[allow(unused_macros)]
macro_rules! impl_data_provider {
    ($ provider : ty) => {
        make_provider!($provider);
        impl_normalizer_nfd_tables_v1!($provider);
        impl_datetime_relative_hour_long_v1!($provider);
        impl_datetime_patterns_date_gregorian_v1!($provider);
        impl_datetime_relative_quarter_long_v1!($provider);
        impl_datetime_patterns_time_v1!($provider);
        impl_normalizer_nfd_supplement_v1!($provider);
        impl_datetime_names_month_gregorian_v1!($provider);
        impl_units_id_v1!($provider);
        impl_datetime_relative_quarter_short_v1!($provider);
        impl_collation_reordering_v1!($provider);
        impl_datetime_relative_week_long_v1!($provider);
        impl_datetime_names_dayperiod_v1!($provider);
        impl_segmenter_break_sentence_v1!($provider);
        impl_datetime_relative_minute_long_v1!($provider);
        impl_collation_diacritics_v1!($provider);
        impl_calendar_preferred_v1!($provider);
        impl_datetime_names_month_buddhist_v1!($provider);
        impl_locale_names_region_v0!($provider);
        impl_datetime_names_weekday_v1!($provider);
        impl_datetime_relative_second_short_v1!($provider);
        impl_datetime_relative_month_narrow_v1!($provider);
        impl_datetime_relative_month_long_v1!($provider);
        impl_plurals_ordinal_v1!($provider);
        impl_currency_displayname_v1!($provider);
        impl_decimal_symbols_v1!($provider);
        impl_currency_patterns_data_v1!($provider);
        impl_datetime_relative_day_long_v1!($provider);
        impl_datetime_relative_second_narrow_v1!($provider);
        impl_datetime_relative_week_narrow_v1!($provider);
        impl_locale_likely_subtags_language_v1!($provider);
        impl_locale_parents_v1!($provider);
        impl_timezone_names_locations_root_v1!($provider);
        impl_datetime_relative_quarter_narrow_v1!($provider);
        impl_datetime_relative_hour_narrow_v1!($provider);
        impl_timezone_names_specific_short_v1!($provider);
        impl_datetime_relative_year_long_v1!($provider);
        impl_datetime_patterns_glue_v1!($provider);
        impl_datetime_relative_minute_short_v1!($provider);
        impl_timezone_identifiers_iana_extended_v1!($provider);
        impl_currency_patterns_no_currency_v1!($provider);
        impl_datetime_relative_hour_short_v1!($provider);
        impl_locale_aliases_v1!($provider);
        impl_timezone_names_cities_root_v1!($provider);
        impl_collation_jamo_v1!($provider);
        impl_segmenter_break_grapheme_cluster_v1!($provider);
        impl_units_names_length_core_v1!($provider);
        impl_datetime_relative_week_short_v1!($provider);
        impl_units_names_area_core_v1!($provider);
        impl_units_essentials_v1!($provider);
        impl_datetime_relative_day_narrow_v1!($provider);
        impl_collation_metadata_v1!($provider);
        impl_plurals_cardinal_v1!($provider);
        impl_datetime_relative_day_short_v1!($provider);
        impl_units_names_mass_core_v1!($provider);
        impl_list_or_v1!($provider);
        impl_timezone_names_generic_short_v1!($provider);
        impl_list_and_v1!($provider);
        impl_datetime_names_year_buddhist_v1!($provider);
        impl_locale_names_language_v0!($provider);
        impl_timezone_names_specific_long_v1!($provider);
        impl_plurals_ranges_v1!($provider);
        impl_collation_tailoring_v1!($provider);
        impl_decimal_digits_v1!($provider);
        impl_currency_essentials_v1!($provider);
        impl_locale_names_script_v0!($provider);
        impl_calendar_japanese_modern_v1!($provider);
        impl_timezone_names_essentials_v1!($provider);
        impl_currency_decimal_symbols_v1!($provider);
        impl_calendar_week_v1!($provider);
        impl_timezone_names_cities_override_v1!($provider);
        impl_timezone_periods_v1!($provider);
        impl_datetime_patterns_date_japanese_v1!($provider);
        impl_datetime_relative_month_short_v1!($provider);
        impl_locale_names_locale_v0!($provider);
        impl_datetime_relative_second_long_v1!($provider);
        impl_locale_names_variant_v0!($provider);
        impl_timezone_names_generic_long_v1!($provider);
        impl_list_unit_v1!($provider);
        impl_collation_special_primaries_v1!($provider);
        impl_normalizer_nfd_data_v1!($provider);
        impl_timezone_identifiers_iana_core_v1!($provider);
        impl_decimal_compact_short_v1!($provider);
        impl_segmenter_break_word_v1!($provider);
        impl_datetime_patterns_date_buddhist_v1!($provider);
        impl_timezone_names_standard_long_v1!($provider);
        impl_datetime_relative_year_narrow_v1!($provider);
        impl_units_names_volume_core_v1!($provider);
        impl_datetime_names_month_japanese_v1!($provider);
        impl_currency_symbols_v1!($provider);
        impl_locale_likely_subtags_extended_v1!($provider);
        impl_datetime_relative_year_short_v1!($provider);
        impl_decimal_compact_long_v1!($provider);
        impl_locale_script_direction_v1!($provider);
        impl_datetime_names_year_gregorian_v1!($provider);
        impl_segmenter_break_word_override_v1!($provider);
        impl_segmenter_break_sentence_override_v1!($provider);
        impl_collation_root_v1!($provider);
        impl_units_names_duration_core_v1!($provider);
        impl_currency_fractions_v1!($provider);
        impl_units_info_v1!($provider);
        impl_timezone_names_locations_override_v1!($provider);
        impl_datetime_relative_minute_narrow_v1!($provider);
        impl_decimal_percent_v1!($provider);
        impl_locale_likely_subtags_script_region_v1!($provider);
        impl_datetime_names_year_japanese_v1!($provider);
    };
}
