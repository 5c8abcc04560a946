return { list: [1, 2, 3], nested: { ok: true }, text: "x" };
