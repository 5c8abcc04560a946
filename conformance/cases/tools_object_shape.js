const proto = Object.getPrototypeOf(tools);
return {
  keys: Object.keys(tools),
  names: [tools.echo.name, tools.add.name, tools.ToolSearch.name, tools.mcp__srv__get.name],
  own: Object.getOwnPropertyNames(tools).includes("mcp__srv__get"),
  protoIsPlain: proto === Object.prototype || proto === null,
  thenable: typeof tools.then,
};
