//! Every isolation claim, tried: each test attempts an escape and asserts the refusal.

use exec_host_tests::Harness;
use serde_json::json;

async fn value_of(code: &str) -> serde_json::Value {
    Harness::value_of(code).await
}

#[tokio::test]
async fn no_global_reaches_the_host() {
    let names = [
        "require",
        "process",
        "Buffer",
        "module",
        "exports",
        "XMLHttpRequest",
        "WebSocket",
        "WebAssembly",
        "setInterval",
        "Deno",
        "Bun",
        "std",
        "os",
        "print",
        "scriptArgs",
        "__host",
        "host",
    ];
    let code = format!("return {}.map(n => typeof globalThis[n])", serde_json::to_string(&names).unwrap());
    let types = value_of(&code).await;
    assert!(types.as_array().unwrap().iter().all(|t| t == "undefined"), "{types}");
}

#[tokio::test]
async fn the_native_hooks_are_not_reachable_from_the_script() {
    // The prelude keeps them in a closure: nothing on the global object, on tools or on
    // console names them.
    let code = "const seen = new Set(); const out = [];
      const visit = (o, path, depth) => {
        if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o) || depth > 4) return;
        seen.add(o);
        for (const k of Reflect.ownKeys(o)) {
          let v; try { v = o[k]; } catch (e) { continue; }
          if (k === 'prefixLength' || (k === 'start' && typeof o.search === 'function')) out.push(path + '.' + k);
          visit(v, path + '.' + String(k), depth + 1);
        }
      };
      visit(globalThis, 'globalThis', 0);
      return out;";
    assert_eq!(value_of(code).await, json!([]));
}

#[tokio::test]
async fn eval_cannot_be_restored_from_any_prototype() {
    let code = "const out = [];
      const fns = [function () {}, async function () {}, function* () {}, async function* () {}, () => {}, class {}, Math.max, tools.echo, console.log, Function.prototype];
      for (const f of fns) {
        let ctor = f.constructor;
        for (let i = 0; i < 3 && ctor; i++) {
          try { ctor('return 1'); out.push('compiled'); } catch (e) { out.push(e.name); }
          ctor = ctor.constructor;
        }
      }
      try { Reflect.construct(Function, ['return 1']); out.push('compiled'); } catch (e) { out.push(e.name); }
      try { class F extends Function {}; new F('return 1'); out.push('compiled'); } catch (e) { out.push(e.name); }
      return [...new Set(out)];";
    assert_eq!(value_of(code).await, json!(["EvalError"]));
}

#[tokio::test]
async fn replacing_the_guards_does_not_bring_eval_back() {
    // Even if a script undoes the prelude's replacements, the engine has no eval in this
    // realm: the original constructors are unreachable, and deleting the replacements
    // leaves nothing that compiles.
    let code = "delete Function.prototype.constructor; delete globalThis.eval; delete globalThis.Function;
      const out = [];
      // What a deletion uncovers may be callable (`Object`), so only code that ran counts.
      for (const attempt of [() => Function.prototype.constructor('return 1'), () => eval('() => 1'), () => (() => 1).constructor('return 1')]) {
        try { const f = attempt(); out.push(typeof f === 'function' && f() === 1 ? 'compiled' : 'refused'); } catch (e) { out.push(e.name); }
      }
      return out;";
    let out = value_of(code).await;
    assert!(out.as_array().unwrap().iter().all(|v| v != "compiled"), "{out}");
}

#[tokio::test]
async fn modules_cannot_be_loaded() {
    let code = "const out = [];
      for (const m of ['node:fs', 'fs', './x.js', 'data:text/javascript,export default 1', 'https://example.com/x.js']) {
        try { await import(m); out.push('loaded'); } catch (e) { out.push(e.message); }
      }
      return [...new Set(out)];";
    assert_eq!(value_of(code).await, json!(["import() is not available in Exec scripts"]));
}

#[tokio::test]
async fn static_imports_do_not_parse() {
    let outcome = Harness::new().await.run("import fs from 'fs';\nreturn 1").await;
    assert!(!outcome.ok());
    assert!(outcome.text().contains("SyntaxError"), "{}", outcome.text());
}

#[tokio::test]
async fn returned_values_are_copies() {
    // What the script receives is a deep copy: changing it does not change what the tool
    // gives the next time, and functions or prototypes never cross.
    let code = "const a = await tools.echo({ value: { list: [1], inner: { x: 1 } } });
      a.list.push(2); a.inner.x = 99;
      const b = await tools.echo({ value: { list: [1], inner: { x: 1 } } });
      return [b.list.length, b.inner.x, Object.getPrototypeOf(b) === Object.prototype];";
    assert_eq!(value_of(code).await, json!([1, 1, true]));
}

#[tokio::test]
async fn proxies_and_tricky_objects_cross_only_as_data() {
    let code = "const out = [];
      const trap = new Proxy({}, { getPrototypeOf() { return Object.prototype; }, ownKeys() { return ['a']; },
        getOwnPropertyDescriptor() { return { value: 1, enumerable: true, configurable: true }; }, get() { return 1; } });
      out.push(await tools.echo({ value: trap }));
      const sneaky = { toJSON() { return 'replaced'; } };
      try { await tools.echo({ value: sneaky }); out.push('sent'); } catch (e) { out.push(e.name); }
      const nullProto = Object.create(null); nullProto.k = 'v';
      out.push(await tools.echo({ value: nullProto }));
      return out;";
    assert_eq!(value_of(code).await, json!([{"a": 1}, "TypeError", {"k": "v"}]));
}

#[tokio::test]
async fn the_tools_object_is_not_a_thenable_and_has_no_prototype() {
    let code = "const t = await Promise.resolve(tools);
      return [t === tools, typeof tools.then, Object.getPrototypeOf(Object.getPrototypeOf(tools)), typeof tools.__proto__,
        typeof tools.toString, typeof tools.constructor, typeof tools.hasOwnProperty];";
    assert_eq!(value_of(code).await, json!([true, "undefined", null, "undefined", "undefined", "undefined", "undefined"]));
}

#[tokio::test]
async fn time_and_randomness_are_the_only_ambient_inputs() {
    let code = "return [typeof Date.now(), Date.now() > 1.6e12, typeof Math.random(), typeof performance];";
    assert_eq!(value_of(code).await, json!(["number", true, "number", "undefined"]));
}

#[tokio::test]
async fn arguments_cross_exactly_as_json_would_carry_them() {
    // The guest's own encoder must agree with JSON.stringify on every plain value: a seeded
    // generator builds nested values of every kind (escapes, unicode, big and tiny numbers,
    // -0, holes, empty containers, null-prototype objects), sends each through the `echo`
    // tool and compares what comes back.
    let code = r#"
      let seed = 12345;
      const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      const pick = (list) => list[Math.floor(random() * list.length)];
      const strings = ["", "plain", "quote\"back\\slash", "tab\tnew\nline\r", "\u0000\u001f\u007f", "émoji 🎉 日本",
        "</script>", "\u2028\u2029", "key with spaces"];
      const numbers = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 2 ** 53, -(2 ** 31), 123456789.125, Number.MAX_VALUE, Number.MIN_VALUE];
      function value(depth) {
        const kind = depth > 4 ? Math.floor(random() * 4) : Math.floor(random() * 7);
        switch (kind) {
          case 0: return pick(strings);
          case 1: return pick(numbers);
          case 2: return pick([true, false, null]);
          case 3: return Math.floor(random() * 1e6) - 5e5;
          case 4: { const a = []; const n = Math.floor(random() * 4); for (let i = 0; i < n; i++) a.push(value(depth + 1)); if (random() < 0.1) a[n + 1] = 1; return a; }
          case 5: { const o = {}; const n = Math.floor(random() * 4); for (let i = 0; i < n; i++) o[pick(strings) + i] = value(depth + 1); if (random() < 0.2) o.skipped = undefined; return o; }
          default: { const o = Object.create(null); o[String(Math.floor(random() * 10))] = value(depth + 1); return o; }
        }
      }
      const mismatches = [];
      for (let i = 0; i < 300; i++) {
        const original = { value: value(0) };
        const back = await tools.echo(original);
        const want = JSON.stringify(original.value), got = JSON.stringify(back);
        if (want !== got && !(want === undefined && back === null)) mismatches.push([want, got]);
      }
      return mismatches.slice(0, 3);"#;
    let outcome = Harness::new().await.run_with(code, exec_host::Limits::default().with_max_calls(1000)).await;
    assert!(outcome.ok(), "{}", outcome.text());
    assert_eq!(outcome.value().unwrap(), &json!([]), "{}", outcome.text());
}

#[tokio::test]
async fn unpaired_surrogates_cross_as_replacement_characters() {
    // JSON text between guest and host is UTF-8, which cannot hold an unpaired surrogate.
    let code = r#"return [await tools.echo({ value: "a\ud800b" }), await tools.echo({ value: "pair 😀" })];"#;
    assert_eq!(value_of(code).await, json!(["a\u{fffd}b", "pair 😀"]));
}
