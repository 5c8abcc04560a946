  // ---------------------------------------------------------- TextEncoder, TextDecoder --
  // The bytes of a BufferSource (an ArrayBuffer or a view of one), as a Uint8Array over them.
  function bytesOf(source, what) {
    if (source !== null && typeof source === 'object') {
      switch (host.kindOf(source)) {
        case 'arraybuffer': return new Uint8ArrayCtor(source);
        case 'typedarray': return new Uint8ArrayCtor(typedArrayBuffer(source), typedArrayByteOffset(source), typedArrayByteLength(source));
        case 'dataview': return new Uint8ArrayCtor(dataViewBuffer(source), dataViewByteOffset(source), dataViewByteLength(source));
      }
    }
    throw new TypeErrorCtor(`${what} takes an ArrayBuffer, a typed array or a DataView`);
  }

  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input = '') {
      return host.utf8Encode(usv(input));
    }
    encodeInto(source, destination) {
      requireArguments(arguments.length, 2, 'TextEncoder.encodeInto()');
      const text = usv(source);
      if (typedArrayTag(destination) !== 'Uint8Array') throw new TypeErrorCtor('TextEncoder.encodeInto() writes into a Uint8Array');
      const counts = host.utf8EncodeInto(text, destination);
      return { read: counts[0], written: counts[1] };
    }
  }
  defineProperty(TextEncoder.prototype, toStringTagSymbol, { value: 'TextEncoder', configurable: true });
  install('TextEncoder', TextEncoder);

  const utf8Labels = ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'];

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    // Stream state: whether the stream is past its start (a BOM is only stripped there),
    // and the bytes of a character the last chunk left incomplete.
    #started = false;
    #held = null;
    constructor(label = 'utf-8', options = undefined) {
      const name = stringToLowerCase(stringTrim(`${label}`));
      let known = false;
      for (let i = 0; i < utf8Labels.length; i++) known = known || utf8Labels[i] === name;
      if (!known) throw new RangeErrorCtor(`TextDecoder: the encoding "${label}" is not supported (Exec scripts decode UTF-8 only)`);
      if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
        throw new TypeErrorCtor('TextDecoder: the options must be an object');
      }
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() { return 'utf-8'; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input = undefined, options = undefined) {
      let bytes = input === undefined ? new Uint8ArrayCtor(0) : bytesOf(input, 'TextDecoder.decode()');
      const stream = !!(options && options.stream);
      if (this.#held !== null) {
        const joined = new Uint8ArrayCtor(this.#held.length + typedArrayLength(bytes));
        typedArraySet(joined, this.#held);
        typedArraySet(joined, bytes, this.#held.length);
        bytes = joined;
        this.#held = null;
      }
      const decoded = host.utf8Decode(bytes, this.#fatal, !this.#ignoreBOM && !this.#started, stream);
      if (decoded == null) {
        this.#started = false;
        throw new TypeErrorCtor('TextDecoder.decode(): the data is not valid UTF-8');
      }
      const text = decoded[0];
      const held = decoded[1];
      const length = typedArrayLength(bytes);
      if (stream) {
        if (held > 0) this.#held = typedArraySlice(bytes, length - held);
        this.#started = this.#started || length > held;
      } else {
        this.#started = false;
      }
      return text;
    }
  }
  defineProperty(TextDecoder.prototype, toStringTagSymbol, { value: 'TextDecoder', configurable: true });
  install('TextDecoder', TextDecoder);

