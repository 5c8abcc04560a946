  // ----------------------------------------------------------------------- atob, btoa --
  const base64 = {
    atob(data) {
      requireArguments(arguments.length, 1, 'atob()');
      const bytes = host.base64Decode(usv(data));
      if (bytes == null) throw new DOMException('atob(): the string to be decoded is not correctly encoded', 'InvalidCharacterError');
      return bytes;
    },
    btoa(data) {
      requireArguments(arguments.length, 1, 'btoa()');
      const text = host.base64Encode(usv(data));
      if (text == null) throw new DOMException('btoa(): the string to be encoded contains characters outside of the Latin1 range', 'InvalidCharacterError');
      return text;
    },
  };
  install('atob', base64.atob);
  install('btoa', base64.btoa);

