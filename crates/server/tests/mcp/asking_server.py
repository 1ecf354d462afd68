"""An MCP server whose tool asks the person back while it runs, for the server's tests, built
with the Python `mcp` SDK (pinned in requirements.txt). Its one tool has the name the scripted
model calls, `read_file(path)`, and the path says what it asks:

- form.txt: a form (email, copies 1..5, urgent yes/no, format pdf/csv) through `ctx.elicit`;
  the result says what came back;
- link.txt: a URL to open (`ctx.elicit_url`); the result is the action;
- secret.txt: a form asking for a password (which a client must refuse);
- rounds.txt (2026-07-28 only): answers `input_required` with one form question and the
  request state "round-1"; the retry must carry the answer and that state (the SDK seals it,
  so a changed byte is refused), and the result quotes both;
- loop.txt (2026-07-28 only): answers `input_required` every time.

Usage: python asking_server.py stdio | python asking_server.py PORT (streamable HTTP)
"""

import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel, Field

server = MCPServer("signoff-test-asking")


class Report(BaseModel):
    email: str = Field(title="Email", json_schema_extra={"format": "email"})
    copies: int = Field(ge=1, le=5, description="How many copies")
    urgent: bool = False
    format: str = Field(default="pdf", json_schema_extra={"enum": ["pdf", "csv"]})


class Login(BaseModel):
    password: str


CONFIRM = ElicitRequest(
    params=ElicitRequestFormParams(
        message="Archive the old reports too?",
        requested_schema={
            "type": "object",
            "properties": {"archive": {"type": "boolean", "title": "Archive"}},
            "required": ["archive"],
        },
    )
)


@server.tool()
async def read_file(path: str, ctx: Context) -> str | InputRequiredResult:
    """Reads a file, asking the person what it needs to know first."""
    if path == "form.txt":
        answer = await ctx.elicit("Where should the report go?", Report)
        if answer.action == "accept":
            return "accepted " + answer.data.model_dump_json()
        return answer.action
    if path == "link.txt":
        answer = await ctx.elicit_url(
            "Sign in to the archive", "https://login.example.com/authorize?client=7", "e-1"
        )
        return answer.action
    if path == "secret.txt":
        answer = await ctx.elicit("Your archive password", Login)
        return answer.action
    if path == "rounds.txt":
        if ctx.request_state is None:
            return InputRequiredResult(input_requests={"confirm": CONFIRM}, request_state="round-1")
        responses = {
            key: value.model_dump(mode="json", exclude_none=True, by_alias=True)
            if hasattr(value, "model_dump")
            else value
            for key, value in (ctx.input_responses or {}).items()
        }
        return f"state {ctx.request_state}; answers " + json.dumps(responses, sort_keys=True)
    if path == "loop.txt":
        return InputRequiredResult(input_requests={"confirm": CONFIRM}, request_state="again")
    raise ValueError(f"no such file: {path}")


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run(transport="stdio")
    else:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
