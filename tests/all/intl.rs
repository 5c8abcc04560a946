//! `Intl` in the guest, against V8: a fixed set of formatting and collation calls of the
//! kinds models write in reports, each with the value Node (V8 with full ICU, in UTC)
//! returns for it, run through the real guest and host.

use exec_host_tests::Harness;

/// A Tuesday afternoon in UTC: 2024-03-05T14:07:09Z.
const DATE: &str = "new Date(Date.UTC(2024, 2, 5, 14, 7, 9))";

/// Each call, and what Node returns for it (recorded with Node 20, ICU 78, CLDR 48).
const CALLS: &[(&str, &str)] = &[
    ("(1234567.891).toLocaleString()", "1,234,567.891"),
    ("(1234567.891).toLocaleString('de-DE')", "1.234.567,891"),
    ("new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(1234.5)", "$1,234.50"),
    ("new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(-1234.5)", "-1.234,50 €"),
    ("new Intl.NumberFormat('ja-JP', { style: 'currency', currency: 'JPY' }).format(5000)", "￥5,000"),
    ("new Intl.NumberFormat('de-CH', { style: 'currency', currency: 'CHF' }).format(1234.5)", "CHF 1'234.50"),
    ("new Intl.NumberFormat('en-IN').format(12345678.9)", "1,23,45,678.9"),
    ("new Intl.NumberFormat('fr-FR', { maximumFractionDigits: 2 }).format(1234.5678)", "1 234,57"),
    ("new Intl.NumberFormat('es-ES').format(1234.5)", "1234,5"),
    ("new Intl.NumberFormat('en', { notation: 'compact' }).format(1234567)", "1.2M"),
    ("new Intl.NumberFormat('en', { notation: 'compact', compactDisplay: 'long' }).format(2500)", "2.5 thousand"),
    ("new Intl.NumberFormat('en', { style: 'percent', maximumFractionDigits: 1 }).format(0.4567)", "45.7%"),
    ("new Intl.NumberFormat('en', { minimumFractionDigits: 2 }).format(5)", "5.00"),
    ("new Intl.NumberFormat('en', { maximumSignificantDigits: 3 }).format(0.0012345)", "0.00123"),
    ("new Intl.NumberFormat('en', { signDisplay: 'exceptZero' }).format(-3.2)", "-3.2"),
    ("(123456789n).toLocaleString('en-US')", "123,456,789"),
    (
        "JSON.stringify(new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR' }).formatToParts(-9.5))",
        "[{\"type\":\"minusSign\",\"value\":\"-\"},{\"type\":\"currency\",\"value\":\"€\"},{\"type\":\"integer\",\"value\":\"9\"},{\"type\":\"decimal\",\"value\":\".\"},{\"type\":\"fraction\",\"value\":\"50\"}]",
    ),
    ("d.toLocaleDateString('en-US', { timeZone: 'UTC' })", "3/5/2024"),
    ("d.toLocaleDateString('de-DE', { month: 'short', timeZone: 'UTC' })", "Mär"),
    (
        "d.toLocaleDateString('en-GB', { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' })",
        "Tuesday, 5 March 2024",
    ),
    ("new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' }).format(d)", "Mar 5, 2024"),
    (
        "new Intl.DateTimeFormat('en-US', { dateStyle: 'full', timeStyle: 'long', timeZone: 'America/New_York' }).format(d)",
        "Tuesday, March 5, 2024 at 9:07:09 AM EST",
    ),
    ("d.toLocaleTimeString('en-US', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' })", "02:07 PM"),
    ("d.toLocaleString('en-GB', { timeZone: 'UTC' })", "05/03/2024, 14:07:09"),
    ("d.toLocaleString('ja-JP', { timeZone: 'Asia/Tokyo' })", "2024/3/5 23:07:09"),
    ("new Intl.DateTimeFormat('fr-FR', { dateStyle: 'long', timeZone: 'Europe/Paris' }).format(d)", "5 mars 2024"),
    (
        "new Intl.DateTimeFormat('en-US', { hour: 'numeric', timeZone: 'America/Los_Angeles', timeZoneName: 'short' }).format(d)",
        "6 AM PST",
    ),
    ("d.toLocaleDateString('zh-CN', { timeZone: 'UTC' })", "2024/3/5"),
    ("Intl.DateTimeFormat().resolvedOptions().timeZone", "UTC"),
    ("['z', 'ä', 'a'].sort(new Intl.Collator('de').compare).join()", "a,ä,z"),
    ("'ä'.localeCompare('z', 'de')", "-1"),
    ("['item10', 'item2', 'Item1'].sort(new Intl.Collator('en', { numeric: true }).compare).join()", "Item1,item2,item10"),
    ("['b', 'a', 'B', 'A'].sort(new Intl.Collator('en', { caseFirst: 'upper' }).compare).join()", "A,a,B,b"),
    ("'a'.localeCompare('A', undefined, { sensitivity: 'base' })", "0"),
    ("['ö', 'o', 'z'].sort(new Intl.Collator('sv').compare).join()", "o,z,ö"),
    ("new Intl.PluralRules('en').select(1) + ' ' + new Intl.PluralRules('en', { type: 'ordinal' }).select(22)", "one two"),
    ("new Intl.ListFormat('en', { type: 'conjunction' }).format(['apples', 'pears', 'plums'])", "apples, pears, and plums"),
    ("new Intl.RelativeTimeFormat('en', { numeric: 'auto' }).format(-1, 'day')", "yesterday"),
    ("new Intl.RelativeTimeFormat('de').format(3, 'week')", "in 3 Wochen"),
    (
        "[...new Intl.Segmenter('en', { granularity: 'word' }).segment('Hello, world! How are you?')].filter((s) => s.isWordLike).length",
        "5",
    ),
];

/// Units, durations and ranges, with what Node 24 (V8 with ICU 78, CLDR 48) returns.
const UNIT_DURATION_RANGE_CALLS: &[(&str, &str)] = &[
    ("new Intl.NumberFormat('en', { style: 'unit', unit: 'kilobyte' }).format(1536)", "1,536 kB"),
    (
        "new Intl.NumberFormat('en', { style: 'unit', unit: 'megabyte', unitDisplay: 'long', maximumFractionDigits: 1 }).format(2.25)",
        "2.3 megabytes",
    ),
    (
        "new Intl.NumberFormat('de', { style: 'unit', unit: 'kilometer-per-hour', unitDisplay: 'long' }).format(1)",
        "1 Kilometer pro Stunde",
    ),
    ("new Intl.NumberFormat('en-GB', { style: 'unit', unit: 'liter', unitDisplay: 'long' }).format(3)", "3 litres"),
    ("new Intl.NumberFormat('fr', { style: 'unit', unit: 'celsius' }).format(21.5)", "21,5 °C"),
    ("new Intl.NumberFormat('en', { style: 'unit', unit: 'percent', signDisplay: 'always' }).format(12)", "+12%"),
    ("new Intl.NumberFormat('ja', { style: 'unit', unit: 'hour', unitDisplay: 'long' }).format(3)", "3 時間"),
    (
        "new Intl.NumberFormat('en', { style: 'unit', unit: 'byte-per-second', notation: 'compact' }).format(1500000)",
        "1.5M byte/s",
    ),
    (
        "JSON.stringify(new Intl.NumberFormat('en', { style: 'unit', unit: 'mile-per-hour', unitDisplay: 'long' }).formatToParts(-1))",
        "[{\"type\":\"minusSign\",\"value\":\"-\"},{\"type\":\"integer\",\"value\":\"1\"},{\"type\":\"literal\",\"value\":\" \"},{\"type\":\"unit\",\"value\":\"mile per hour\"}]",
    ),
    ("new Intl.DurationFormat('en', { style: 'long' }).format({ hours: 1, minutes: 30 })", "1 hour, 30 minutes"),
    ("new Intl.DurationFormat('en').format({ days: 2, hours: 5, seconds: 7 })", "2 days, 5 hr, 7 sec"),
    (
        "new Intl.DurationFormat('en', { style: 'digital' }).format({ hours: 1, minutes: 5, seconds: 9, milliseconds: 250 })",
        "1:05:09.25",
    ),
    ("new Intl.DurationFormat('de', { style: 'narrow' }).format({ minutes: 3, seconds: 20 })", "3 Min., 20 Sek."),
    ("new Intl.DurationFormat('fi', { style: 'digital' }).format({ hours: 2, minutes: 0, seconds: 5 })", "2.00.05"),
    (
        "new Intl.DurationFormat('en', { style: 'digital', fractionalDigits: 2 }).format({ minutes: -1, seconds: -2, milliseconds: -345 })",
        "-0:01:02.34",
    ),
    (
        "new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 0 }).formatRange(3, 5)",
        "$3 – $5",
    ),
    ("new Intl.NumberFormat('en', { style: 'unit', unit: 'kilometer' }).formatRange(3, 5)", "3–5 km"),
    ("new Intl.NumberFormat('de', { style: 'currency', currency: 'EUR' }).formatRange(10, 20)", "10,00–20,00 €"),
    ("new Intl.NumberFormat('en').formatRange(2.9999, 3.0001)", "~3"),
    (
        "new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' }).formatRange(Date.UTC(2024, 0, 5), Date.UTC(2024, 0, 5, 12))",
        "Jan 5, 2024",
    ),
    ("new Intl.NumberFormat('zh-TW').format(NaN)", "非數值"),
    (
        "new Intl.NumberFormat('en', { notation: 'compact', compactDisplay: 'long' }).formatToParts(2500000).map((p) => p.type).join()",
        "integer,decimal,fraction,literal,compact",
    ),
    (
        "new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', currencySign: 'accounting', signDisplay: 'always' }).format(0)",
        "+$0.00",
    ),
    ("new Intl.PluralRules('ar').resolvedOptions().pluralCategories.join()", "zero,one,two,few,many,other"),
];

#[tokio::test]
async fn formatting_and_collation_match_v8() {
    assert_calls_match_v8(CALLS).await;
}

#[tokio::test]
async fn units_durations_and_ranges_match_v8() {
    assert_calls_match_v8(UNIT_DURATION_RANGE_CALLS).await;
}

async fn assert_calls_match_v8(calls: &[(&str, &str)]) {
    let mut code = format!("const d = {DATE}; const out = [];\n");
    for (call, _) in calls {
        code.push_str(&format!("try {{ out.push(String({call})); }} catch (e) {{ out.push('threw ' + e); }}\n"));
    }
    code.push_str("return out;");
    let values = Harness::value_of(&code).await;
    let values = values.as_array().expect("an array of results");
    let mismatches: Vec<String> = calls
        .iter()
        .zip(values)
        .filter(|((_, expected), got)| got.as_str() != Some(*expected))
        .map(|((call, expected), got)| format!("{call}\n    V8:   {expected:?}\n    ours: {got}"))
        .collect();
    assert!(mismatches.is_empty(), "{} of {} calls differ from V8:\n{}", mismatches.len(), calls.len(), mismatches.join("\n"));
}

#[tokio::test]
async fn a_locale_without_data_gets_the_default_locale() {
    let code = "const nf = new Intl.NumberFormat(['sw-KE', 'xx'], { style: 'currency', currency: 'KES' });
      return [nf.resolvedOptions().locale, nf.format(1234.5), Intl.NumberFormat.supportedLocalesOf(['sw-KE', 'de-AT', 'fr']),
        new Intl.Collator('sw').resolvedOptions().locale, new Intl.NumberFormat('de-AT-u-nu-arab').resolvedOptions().locale,
        new Intl.DisplayNames('sw', { type: 'region' }).of('DE')];";
    assert_eq!(
        Harness::value_of(code).await,
        serde_json::json!(["en-US", "KES\u{a0}1,234.50", ["de-AT", "fr"], "en-US", "de-AT-u-nu-arab", "Germany"])
    );
}

#[tokio::test]
async fn bad_options_throw_the_errors_ecma402_names() {
    let code = "const out = [];
      for (const attempt of [
        () => new Intl.NumberFormat('en', { style: 'currency' }),
        () => new Intl.NumberFormat('en', { maximumFractionDigits: 101 }),
        () => new Intl.NumberFormat('en', { minimumFractionDigits: 3, maximumFractionDigits: 1 }),
        () => new Intl.NumberFormat('en', { currency: 'US' }),
        () => new Intl.NumberFormat('not a locale'),
        () => new Intl.NumberFormat('en', { notation: 'tiny' }),
        () => new Intl.PluralRules('en', { type: 'few' }),
        () => Intl.PluralRules('en'),
        () => new Intl.ListFormat('en').format(['a', 1]),
        () => new Intl.RelativeTimeFormat('en').format(1, 'fortnight'),
        () => new Intl.DisplayNames('en', { type: 'region' }).of('Germany'),
        () => Intl.supportedValuesOf('colour'),
        () => Intl.NumberFormat.prototype.format.call({}),
      ]) {
        try { attempt(); out.push('no error'); } catch (e) { out.push(e.name); }
      }
      return out;";
    assert_eq!(
        Harness::value_of(code).await,
        serde_json::json!([
            "TypeError",
            "RangeError",
            "RangeError",
            "RangeError",
            "RangeError",
            "RangeError",
            "RangeError",
            "TypeError",
            "TypeError",
            "RangeError",
            "RangeError",
            "RangeError",
            "TypeError"
        ])
    );
}

#[tokio::test]
async fn the_formatters_a_script_makes_are_bounded() {
    // Equal options share one native formatter, so a loop of identical ones is free; 4,242
    // different ones pass the bound of 4,096 and the next constructor throws.
    let code = "for (let i = 0; i < 10000; i++) (i / 7).toLocaleString('de-DE', { maximumFractionDigits: 2 });
      let made = 0;
      try {
        for (let grouping of [true, false])
          for (let integer = 1; integer <= 21; integer++)
            for (let fraction = 0; fraction <= 100; fraction++) {
              new Intl.NumberFormat('en', { useGrouping: grouping, minimumIntegerDigits: integer, maximumFractionDigits: fraction });
              made++;
            }
      } catch (e) {
        return [made, e.name, e.message];
      }
      return [made];";
    let value = Harness::value_of(code).await;
    assert!(value[0].as_u64().unwrap() < 4096, "{value}");
    assert_eq!(value[1], "RangeError", "{value}");
    assert!(value[2].as_str().unwrap().contains("4096"), "{value}");
}

#[tokio::test]
async fn segmenting_is_bounded_and_exact_on_hostile_text() {
    let code = "const out = [];
      const words = [...new Intl.Segmenter('en', { granularity: 'word' }).segment('Hi, 世界 \\uD800 done.')];
      out.push(words.map((s) => `${s.index}:${s.segment}:${s.isWordLike}`).join('|').toWellFormed());
      const graphemes = new Intl.Segmenter('en').segment('a\\u0301👍🏽x');
      out.push(graphemes.containing(2).segment, graphemes.containing(99) === undefined, [...graphemes].length);
      const sentences = [...new Intl.Segmenter('en', { granularity: 'sentence' }).segment('One. Two? Three')];
      out.push(sentences.length);
      try { [...new Intl.Segmenter('en').segment('x'.repeat((1 << 20) + 1))]; out.push('no error'); } catch (e) { out.push(e.name); }
      return out;";
    assert_eq!(
        Harness::value_of(code).await,
        serde_json::json!([
            "0:Hi:true|2:,:false|3: :false|4:世界:true|6: :false|7:\u{fffd}:false|8: :false|9:done:true|13:.:false",
            "👍🏽",
            true,
            3,
            3,
            "RangeError"
        ])
    );
}

#[tokio::test]
async fn locale_methods_reuse_a_plain_format_and_stay_exact_past_the_bound() {
    // Calls with no options and one locale string share one Intl object per locale; past
    // 256 locales each call makes its own, with the same results. Options always count.
    // The values are Node 24's.
    let code = "const regions = [];
      for (let a = 65; a < 91; a++) for (let b = 65; b < 91; b++) regions.push(String.fromCharCode(a, b));
      const out = new Set();
      for (const region of regions.slice(0, 300)) out.add((1234.5).toLocaleString(`de-${region}`));
      return [[...out].sort(), (1234.5).toLocaleString('de-DE'), (1234.5).toLocaleString('de-DE', { maximumFractionDigits: 0 }),
        new Date(0).toLocaleDateString('en-GB'), new Date(0).toLocaleTimeString('en-GB'), 'a'.localeCompare('B', 'en'),
        'a'.localeCompare('A', 'en', { sensitivity: 'base' })];";
    assert_eq!(
        Harness::value_of(code).await,
        serde_json::json!([["1'234.5", "1.234,5", "1\u{a0}234,5"], "1.234,5", "1.235", "01/01/1970", "00:00:00", -1, 0])
    );
}

#[tokio::test]
async fn the_default_time_zone_is_the_one_the_host_gives() {
    // The host's zone is data the run is given; Date's own local time stays UTC. A name
    // the database does not know is UTC.
    let code = "const at = Date.UTC(2024, 2, 5, 14, 7);
      const f = new Intl.DateTimeFormat('en-US', { hour: 'numeric', minute: 'numeric' });
      return [f.resolvedOptions().timeZone, f.format(at), new Date(at).toLocaleString('en-GB'), new Date(at).getHours()];";
    for (zone, expected) in [
        ("Asia/Kolkata", serde_json::json!(["Asia/Kolkata", "7:37 PM", "05/03/2024, 19:37:00", 14])),
        ("europe/paris", serde_json::json!(["Europe/Paris", "3:07 PM", "05/03/2024, 15:07:00", 14])),
        ("Mars/Olympus_Mons", serde_json::json!(["UTC", "2:07 PM", "05/03/2024, 14:07:00", 14])),
    ] {
        let options = exec_host::SandboxOptions::default().with_time_zone(zone);
        let sandbox = exec_host::Sandbox::with_options(options).await.expect("the sandbox sets up");
        let harness = Harness::with(|builder| builder.sandbox(sandbox)).await;
        let outcome = harness.run(code).await;
        assert_eq!(outcome.value(), Some(&expected), "{zone}: {}", outcome.text());
    }
}
