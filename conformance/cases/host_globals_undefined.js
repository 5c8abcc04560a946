return [typeof require, typeof process, typeof Buffer, typeof module, typeof globalThis.fetch, typeof XMLHttpRequest, typeof WebAssembly, typeof setTimeout, typeof tools, typeof console];
