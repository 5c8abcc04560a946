  // --------------------------------------------------------------------- DOMException --
  const exceptionCodes = ObjectCtor.assign(ObjectCtor.create(null), {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
    QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
  });

  class DOMException extends ErrorCtor {
    #name;
    #message;
    constructor(message = '', name = 'Error') {
      super();
      this.#message = `${message}`;
      this.#name = `${name}`;
    }
    get name() { return this.#name; }
    get message() { return this.#message; }
    get code() { return exceptionCodes[this.#name] ?? 0; }
  }
  install('DOMException', DOMException);

