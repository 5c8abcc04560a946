await new Promise(() => {});
return "unreachable";
