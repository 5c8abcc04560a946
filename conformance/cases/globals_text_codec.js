const encoder = new TextEncoder();
const bytes = encoder.encode('aé€😀');
const into = new Uint8Array(5);
const written = encoder.encodeInto('aé€', into);
const decoder = new TextDecoder();
const attempt = (f) => { try { return f(); } catch (e) { return e.name; } };
// A stream split inside a character and inside the BOM.
const stream = new TextDecoder();
const chunks = [[0xef, 0xbb], [0xbf, 0x61, 0xe2, 0x82], [0xac, 0xf0, 0x9f], [0x98, 0x80]];
let streamed = '';
for (const chunk of chunks) streamed += stream.decode(new Uint8Array(chunk), { stream: true });
streamed += stream.decode();
return {
  encoding: [encoder.encoding, decoder.encoding, new TextDecoder('UTF8 ').encoding],
  encoded: Array.from(bytes),
  loneSurrogate: Array.from(encoder.encode('\ud800')),
  encodeInto: [written.read, written.written, Array.from(into)],
  decoded: decoder.decode(bytes),
  fromBuffer: decoder.decode(bytes.buffer.slice(0, 3)),
  fromDataView: decoder.decode(new DataView(bytes.buffer, 1, 2)),
  bom: [decoder.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).length, new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).length],
  replaced: decoder.decode(new Uint8Array([0x61, 0xff, 0xe2, 0x82, 0x62, 0xf0, 0x9f])),
  fatal: [new TextDecoder('utf-8', { fatal: true }).fatal, attempt(() => new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xc0, 0x80])))],
  streamed,
  otherEncoding: attempt(() => new TextDecoder('latin1')),
  notBytes: attempt(() => decoder.decode('text')),
  notUint8: attempt(() => encoder.encodeInto('a', new Uint16Array(2))),
  empty: [encoder.encode().length, decoder.decode()],
};
