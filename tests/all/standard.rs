//! Where the sandbox's own built-ins meet the ECMAScript standard: each place test262 found
//! the sandbox differing from it (`Atomics`, growable shared buffers, the replacements of
//! `eval` and the function constructors, what a thrown non-Error says), tried through the
//! real guest.

use exec_host::Failure;
use exec_host_tests::Harness;
use serde_json::json;

async fn value_of(code: &str) -> serde_json::Value {
    Harness::value_of(code).await
}

#[tokio::test]
async fn atomics_operate_on_integer_arrays_in_one_agent() {
    let code = "const ta = new Int32Array(new SharedArrayBuffer(16));
      const out = [String(Atomics), Atomics.add.length, Atomics.compareExchange.length, Atomics.pause.length];
      out.push(Atomics.store(ta, 0, 5), Atomics.add(ta, 0, 2), Atomics.sub(ta, 0, 1), Atomics.load(ta, 0));
      out.push(Atomics.and(ta, 0, 3), Atomics.or(ta, 0, 8), Atomics.xor(ta, 0, 1), Atomics.exchange(ta, 0, 40), ta[0]);
      out.push(Atomics.compareExchange(ta, 0, 41, 1), ta[0], Atomics.compareExchange(ta, 0, 40, 1), ta[0]);
      // The operand is converted to the element type first, as its raw bytes would be.
      const bytes = new Int8Array(4);
      out.push(Atomics.add(bytes, 1, 127), Atomics.add(bytes, 1, 1), bytes[1], Atomics.store(bytes, 2, 300), bytes[2]);
      out.push(Atomics.compareExchange(bytes, 3, 256, 9), bytes[3]);
      const big = new BigInt64Array(2);
      out.push(String(Atomics.add(big, 0, 2n ** 63n - 1n)), String(Atomics.add(big, 0, 1n)), String(big[0]));
      out.push(Atomics.isLockFree(4), Atomics.isLockFree(3), Atomics.notify(ta, 0), Atomics.notify(new Int32Array(4), 0, 1));
      for (const attempt of [
        () => Atomics.add(new Float64Array(1), 0, 1),
        () => Atomics.load(ta, 4),
        () => Atomics.store(ta, -1, 0),
        () => Atomics.wait(ta, 0, 0, 0),
        () => Atomics.wait(new Int32Array(4), 0, 0, 0),
        () => Atomics.notify(new Uint8Array(4), 0),
        () => Atomics.add(big, 0, 1),
        () => new Atomics.add(ta, 0, 1),
        () => Atomics.pause(1.5),
      ]) {
        try { attempt(); out.push('no error'); } catch (e) { out.push(e.name); }
      }
      const detached = new Int32Array(new ArrayBuffer(8));
      detached.buffer.transfer();
      try { Atomics.load(detached, 0); } catch (e) { out.push(e.name); }
      return out;";
    assert_eq!(
        value_of(code).await,
        json!([
            "[object Atomics]",
            3,
            4,
            0,
            5,
            5,
            7,
            6,
            6,
            2,
            10,
            11,
            40,
            40,
            40,
            40,
            1,
            0,
            127,
            -128,
            300,
            44,
            0,
            9,
            "0",
            "9223372036854775807",
            "-9223372036854775808",
            true,
            false,
            0,
            0,
            "TypeError",
            "RangeError",
            "RangeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError"
        ])
    );
}

#[tokio::test]
async fn a_conversion_that_shrinks_the_buffer_is_seen_before_the_write() {
    // The value's conversion runs script code; the index is checked again after it.
    let code = "const rab = new ArrayBuffer(16, { maxByteLength: 16 });
      const ta = new Int32Array(rab);
      try { Atomics.store(ta, 3, { valueOf() { rab.resize(4); return 1; } }); return 'stored'; }
      catch (e) { return [e.name, rab.byteLength]; }";
    assert_eq!(value_of(code).await, json!(["RangeError", 4]));
}

#[tokio::test]
async fn shared_array_buffers_grow_and_their_memory_counts_against_the_heap() {
    let code = "const sab = new SharedArrayBuffer(4, { maxByteLength: 64 });
      const view = new Uint8Array(sab);
      view[3] = 7;
      sab.grow(32);
      const out = [sab.growable, sab.byteLength, sab.maxByteLength, view.length, view[3]];
      try { sab.grow(8); out.push('shrank'); } catch (e) { out.push(e.name); }
      // Its maximum is allocated at once, so a maximum past the heap limit is refused.
      try { new SharedArrayBuffer(0, { maxByteLength: 2 ** 31 - 1 }); out.push('allocated'); } catch (e) { out.push(e.name); }
      out.push(new SharedArrayBuffer(8).byteLength);
      return out;";
    assert_eq!(value_of(code).await, json!([true, 32, 64, 32, 7, "RangeError", "InternalError", 8]));
}

#[tokio::test]
async fn eval_and_the_function_constructors_have_the_standards_shape() {
    let code = "const GeneratorFunction = Object.getPrototypeOf(function* () {}).constructor;
      const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
      const AsyncGeneratorFunction = Object.getPrototypeOf(async function* () {}).constructor;
      const shape = (f) => [f.name, f.length, Object.getPrototypeOf(f) === (f === Function ? Function.prototype : Function)];
      const constructorOf = (f) => { const d = Object.getOwnPropertyDescriptor(f.prototype, 'constructor'); return [d.value === f, d.writable, d.configurable]; };
      const errorOf = (f) => { try { f(); return 'no error'; } catch (e) { return e.name; } };
      const object = {};
      return {
        eval: [eval.name, eval.length, 'prototype' in eval, eval(5), eval(object) === object, eval(), errorOf(() => eval('1')), errorOf(() => new eval())],
        constructors: [Function, GeneratorFunction, AsyncFunction, AsyncGeneratorFunction].map(shape),
        constructorProperties: [Function, GeneratorFunction, AsyncFunction, AsyncGeneratorFunction].map(constructorOf),
        prototypes: [Object.getOwnPropertyDescriptor(Function, 'prototype').writable, (function* () {}) instanceof GeneratorFunction],
        refused: [() => Function('return 1'), () => new Function('return 1'), () => new GeneratorFunction(''), () => AsyncFunction('')].map(errorOf),
      };";
    assert_eq!(
        value_of(code).await,
        json!({
            "eval": ["eval", 1, false, 5, true, null, "EvalError", "TypeError"],
            "constructors": [
                ["Function", 1, true],
                ["GeneratorFunction", 1, true],
                ["AsyncFunction", 1, true],
                ["AsyncGeneratorFunction", 1, true]
            ],
            "constructorProperties": [[true, true, true], [true, false, true], [true, false, true], [true, false, true]],
            "prototypes": [false, true],
            "refused": ["EvalError", "EvalError", "EvalError", "EvalError"],
        })
    );
}

#[tokio::test]
async fn a_thrown_object_of_a_class_is_reported_with_its_class_name() {
    let harness = Harness::new().await;
    let cases = [
        (
            "class Oops { constructor(m) { this.message = m; } }\nthrow new Oops('no luck')",
            "Uncaught Oops {\"message\":\"no luck\"}",
        ),
        ("throw { code: 7 }", "Uncaught {\"code\":7}"),
        ("throw [1, 2]", "Uncaught [1,2]"),
        ("throw Object.assign(Object.create(null), { a: 1 })", "Uncaught {\"a\":1}"),
        ("throw 'plain'", "Uncaught plain"),
    ];
    for (code, expected) in cases {
        let outcome = harness.run(code).await;
        match outcome.exec_failure() {
            Some(Failure::Thrown(error)) => assert_eq!(error.error, expected, "{code}"),
            other => panic!("{code}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_scripts_this_is_the_global_object_in_strict_code_too() {
    assert_eq!(value_of("'use strict';\nreturn [this === globalThis, (() => this)() === globalThis]").await, json!([true, true]));
    assert_eq!(value_of("return this === globalThis").await, json!(true));
}
