claude mcp add --scope project exec-host -- exec-host serve --workspace .
