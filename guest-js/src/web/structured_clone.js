  // ------------------------------------------------------------------ structuredClone --
  function cloneError(what) {
    return new DOMException(`structuredClone(): ${what} could not be cloned`, 'DataCloneError');
  }

  function data(value) {
    return { value, writable: true, enumerable: true, configurable: true };
  }

  function copyBuffer(buffer) {
    if (bufferDetached(buffer)) throw cloneError('a detached ArrayBuffer');
    const length = bufferByteLength(buffer);
    const copy = bufferResizable(buffer)
      ? new ArrayBufferCtor(length, { maxByteLength: bufferMaxByteLength(buffer) })
      : new ArrayBufferCtor(length);
    typedArraySet(new Uint8ArrayCtor(copy), new Uint8ArrayCtor(buffer));
    return copy;
  }

  function cloneInto(value, memory) {
    const type = typeof value;
    if (type === 'symbol') throw cloneError(`${StringCtor(value)}`);
    if (type === 'function') throw cloneError(`the function ${value.name || '(anonymous)'}`);
    if (value === null || type !== 'object') return value;
    if (mapHas(memory, value)) return mapGet(memory, value);
    const kind = host.kindOf(value);
    let copy;
    switch (kind) {
      case 'boolean': copy = ObjectCtor(booleanValueOf(value)); break;
      case 'number': copy = ObjectCtor(numberValueOf(value)); break;
      case 'string': copy = ObjectCtor(stringValueOf(value)); break;
      case 'bigint': copy = ObjectCtor(bigintValueOf(value)); break;
      case 'date': copy = new DateCtor(dateGetTime(value)); break;
      case 'regexp': copy = new RegExpCtor(regExpSource(value), regExpFlags(value)); break;
      case 'arraybuffer': copy = copyBuffer(value); break;
      case 'typedarray': {
        const buffer = cloneInto(typedArrayBuffer(value), memory);
        const Ctor = typedArrays[typedArrayTag(value)];
        copy = new Ctor(buffer, typedArrayByteOffset(value), typedArrayLength(value));
        break;
      }
      case 'dataview': {
        const buffer = cloneInto(dataViewBuffer(value), memory);
        copy = new DataViewCtor(buffer, dataViewByteOffset(value), dataViewByteLength(value));
        break;
      }
      case 'map': {
        copy = new MapCtor();
        mapSet(memory, value, copy);
        const entries = [];
        mapForEach(value, (v, k) => { entries[entries.length] = k; entries[entries.length] = v; });
        for (let i = 0; i < entries.length; i += 2) {
          mapSet(copy, cloneInto(entries[i], memory), cloneInto(entries[i + 1], memory));
        }
        return copy;
      }
      case 'set': {
        copy = new SetCtor();
        mapSet(memory, value, copy);
        const members = [];
        setForEach(value, (v) => { members[members.length] = v; });
        for (let i = 0; i < members.length; i++) setAdd(copy, cloneInto(members[i], memory));
        return copy;
      }
      case 'error': {
        const name = value.name;
        const Ctor = typeof name === 'string' && errorTypes[name] ? errorTypes[name] : ErrorCtor;
        const message = getOwnPropertyDescriptor(value, 'message');
        copy = message && 'value' in message ? new Ctor(`${message.value}`) : new Ctor();
        mapSet(memory, value, copy);
        const stack = getOwnPropertyDescriptor(value, 'stack');
        if (stack && typeof stack.value === 'string') {
          defineProperty(copy, 'stack', { value: stack.value, writable: true, enumerable: false, configurable: true });
        }
        const cause = getOwnPropertyDescriptor(value, 'cause');
        if (cause && 'value' in cause) {
          defineProperty(copy, 'cause', { value: cloneInto(cause.value, memory), writable: true, enumerable: false, configurable: true });
        }
        return copy;
      }
      case 'array':
      case 'object': {
        copy = kind === 'array' ? new ArrayCtor(value.length) : {};
        mapSet(memory, value, copy);
        const keys = objectKeys(value);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          if (hasOwn(value, key)) defineProperty(copy, key, data(cloneInto(value[key], memory)));
        }
        return copy;
      }
      case 'proxy': throw cloneError('a Proxy');
      default: throw cloneError(`#<${stringSlice(objectToString(value), 8, -1)}>`);
    }
    mapSet(memory, value, copy);
    return copy;
  }

  const cloning = {
    structuredClone(value, options = undefined) {
      requireArguments(arguments.length, 1, 'structuredClone()');
      if (options !== undefined && options !== null) {
        const transfer = options.transfer;
        if (transfer !== undefined && (transfer === null || transfer.length !== 0)) {
          throw cloneError('a transfer list (transferring is not supported in Exec scripts); the value');
        }
      }
      return cloneInto(value, new MapCtor());
    },
  };
  install('structuredClone', cloning.structuredClone);

