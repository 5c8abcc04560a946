for (let i = 0; i < 3; i++) await tools.image({});
return "three images";
