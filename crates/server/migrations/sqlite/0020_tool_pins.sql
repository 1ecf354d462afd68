-- The approved definition of each MCP tool an agent exposes (src/agent/pins/): its name,
-- description and input schema as RFC 8785 canonical JSON, and that text's sha256. The first
-- definition seen is pinned; a server that later serves another one has that tool held back
-- until an operator approves the change, which replaces the row.
CREATE TABLE tool_pins (
    agent       TEXT NOT NULL,            -- "namespace/name"
    tool        TEXT NOT NULL,            -- the name the agent's model and MCP clients see
    source      TEXT NOT NULL,            -- the tool source that serves it
    digest      TEXT NOT NULL,            -- sha256 (hex) of `definition`
    definition  TEXT NOT NULL,            -- canonical JSON: {description, inputSchema, name}
    pinned_at   TEXT NOT NULL,
    pinned_by   TEXT NOT NULL,            -- who approved it; "first use" for the first seen
    PRIMARY KEY (agent, tool)
);
