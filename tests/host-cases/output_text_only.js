const r = await tools.text_only({ text: "just words" });
return [typeof r, r];
