//! The guest's argument encoder and the host's argument parser, through a real Exec: the
//! input picks a JavaScript value (odd numbers, lone surrogates, sparse arrays, cycles,
//! getters that throw, `toJSON`, BigInt, symbols, deep nesting) passed to a tool. The
//! script must get its value back or a catchable error; the host must never panic and the
//! sandbox never stop.
#![no_main]

use std::sync::OnceLock;

use exec_host_tests::Harness;
use exec_host_tests::attack::BROKEN;
use libfuzzer_sys::fuzz_target;

struct World {
    runtime: tokio::runtime::Runtime,
    harness: Harness,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let harness = runtime.block_on(Harness::new());
        World { runtime, harness }
    })
}

/// A JavaScript expression read from the input's bytes.
struct Expression<'a> {
    bytes: &'a [u8],
}

impl Expression<'_> {
    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.bytes.split_first().unwrap_or((&0, &[]));
        self.bytes = rest;
        first
    }

    fn pick<'s>(&mut self, choices: &[&'s str]) -> &'s str {
        choices[usize::from(self.byte()) % choices.len()]
    }

    fn value(&mut self, depth: u32) -> String {
        if depth > 6 || self.bytes.is_empty() {
            return self.pick(&["0", "null", "'x'", "true"]).to_string();
        }
        let n = self.byte();
        match self.byte() % 16 {
            0 => self.pick(&["0", "-0", "1.5", "NaN", "Infinity", "-1e308", "2 ** 53 + 1", "5e-324", "-2147483649"]).into(),
            1 => self.pick(&["''", "'\\ud800'", "'\\udc00x'", "'\\u0000'", "'\"\\\\'", "'\\u2028'", "'é😀'", "'<\\/script>'"]).into(),
            2 => format!("'x'.repeat({})", usize::from(n) * 4099),
            3 => format!("[{}, {}]", self.value(depth + 1), self.value(depth + 1)),
            4 => {
                let key = self.pick(&["__proto__", "constructor", "'a b'", "0", "'\\ud800'", "toJSON", "''", "'-1'"]);
                format!("{{ {key}: {}, k: {} }}", self.value(depth + 1), self.value(depth + 1))
            }
            5 => format!("new Array({})", u32::from(n) * 1031),
            6 => self.pick(&["undefined", "null", "true", "false"]).into(),
            7 => format!("{n}n"),
            8 => self.pick(&["Symbol('s')", "() => 1", "class {}", "new Date(0)", "new Date(NaN)", "/re/g"]).into(),
            9 => self.pick(&["new Map([[1, 2]])", "new Set([1])", "new Uint8Array(3)", "new ArrayBuffer(8)", "Promise.resolve(1)"]).into(),
            10 => "(() => { const o = { a: 1 }; o.self = o; return o; })()".into(),
            11 => "({ get g() { throw new Error('getter') } })".into(),
            12 => format!("({{ toJSON() {{ return {}; }} }})", self.value(depth + 1)),
            13 => format!("Object.assign(Object.create(null), {{ v: {} }})", self.value(depth + 1)),
            14 => format!("JSON.parse('['.repeat({n}) + ']'.repeat({n}))"),
            _ => format!("[{}]", (0..n % 8).map(|_| self.value(depth + 1)).collect::<Vec<_>>().join(", ")),
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    let world = world();
    let value = Expression { bytes }.value(0);
    let code = format!(
        "try {{ const r = await tools.echo({{ value: {value} }}); JSON.stringify(r); return 'ok'; }} catch (e) {{ return 'caught ' + (e && e.name); }}"
    );
    let outcome = world.runtime.block_on(world.harness.run(&code));
    let text = outcome.text();
    if let Some(sign) = BROKEN.iter().find(|sign| text.contains(*sign)) {
        panic!("`{sign}` for {value}:\n{text}");
    }
    let answer = outcome.value().and_then(|v| v.as_str()).unwrap_or_default().to_string();
    assert!(answer == "ok" || answer.starts_with("caught "), "{value}:\n{text}");
});
