const attempt = (f) => { try { return f(); } catch (e) { return `${e.name} (${e.code})`; } };
const bytes = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
return {
  encode: [btoa(''), btoa('f'), btoa('fo'), btoa('foo'), btoa('\u00ff\u00fe')],
  roundTrip: atob(btoa(bytes)) === bytes,
  forgiving: [atob(' Zm9v\nYmFy\t'), atob('Zm9vYg'), atob('Zm9vYg=='), atob('YR==')],
  refused: [
    attempt(() => atob('Zm9vYg=')), attempt(() => atob('Z')), attempt(() => atob('Zm9v!')),
    attempt(() => atob('Zm9v====')), attempt(() => btoa('€')), attempt(() => btoa('\ud800')),
  ],
  arity: attempt(() => atob()),
  coerced: atob(null).length,
  numbers: btoa(12),
};
