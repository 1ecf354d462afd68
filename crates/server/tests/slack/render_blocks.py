"""Renders a Slack message (its Block Kit `blocks`, as Signoff sent them to chat.postMessage or
chat.update) as a standalone HTML page that looks like Slack's: sections with mrkdwn text and
fields, context lines, and action buttons. The Slack tests screenshot it in headless Chromium,
so what a person would see in Slack can be looked at.

    render_blocks.py < message.json > message.html

Only the blocks and mrkdwn Signoff uses are drawn (section, context, actions; *bold*,
_italic_, `code`, ``` blocks, <url|text> links, &lt; &gt; &amp;); anything else is an error,
so a message the renderer does not know is noticed.
"""

import html
import json
import re
import sys

STYLE = """
body { font: 15px/1.46668 -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 0; padding: 16px 20px; background: #fff; color: #1d1c1d; width: 520px; }
.msg { display: flex; gap: 8px; }
.avatar { width: 36px; height: 36px; border-radius: 6px; background: #2f6f4f; color: #fff;
          font-weight: 700; display: flex; align-items: center; justify-content: center; }
.name { font-weight: 900; } .app { font-size: 10px; background: #e8e8e8; border-radius: 2px;
        padding: 1px 3px; margin-left: 4px; color: #616061; font-weight: 700; }
.block { margin: 4px 0; } .context { color: #616061; font-size: 13px; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; }
code { font: 12px Monaco, Menlo, monospace; color: #e01e5a; background: #f6f6f6;
       border: 1px solid #ddd; border-radius: 3px; padding: 1px 3px; }
pre { font: 12px/1.5 Monaco, Menlo, monospace; background: #f8f8f8; border: 1px solid #ddd;
      border-radius: 4px; padding: 8px; white-space: pre-wrap; margin: 4px 0; }
a { color: #1264a3; text-decoration: none; }
.actions { display: flex; gap: 8px; margin-top: 8px; }
.button { border: 1px solid #bbb; border-radius: 4px; padding: 3px 12px; font-weight: 700;
          font-size: 13px; background: #fff; }
.primary { background: #007a5a; color: #fff; border-color: #007a5a; }
.danger { color: #e01e5a; border-color: #e01e5a; }
"""


def inline(text):
    """One line of mrkdwn (already HTML-escaped) with its inline marks."""
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<b>\1</b>", text)
    text = re.sub(r"(?<![\w_])_([^_\n]+)_(?![\w_])", r"<i>\1</i>", text)
    return text


def mrkdwn(text):
    """Slack's mrkdwn as HTML: its own escapes read back, then code blocks, links and marks."""
    # Slack's text is escaped with &lt; &gt; &amp; already; links are <url|text>.
    links = []

    def link(match):
        url, _, label = match.group(1).partition("|")
        links.append((url, label or url))
        return f"\x00{len(links) - 1}\x00"

    text = re.sub(r"<([^<>]+)>", link, text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    parts = text.split("```")
    out = []
    for i, part in enumerate(parts):
        escaped = html.escape(part)
        if i % 2:
            out.append(f"<pre>{escaped.strip(chr(10))}</pre>")
        else:
            out.append("<br>".join(inline(line) for line in escaped.split("\n")))
    rendered = "".join(out)
    for i, (url, label) in enumerate(links):
        rendered = rendered.replace(
            f"\x00{i}\x00", f'<a href="{html.escape(url)}">{html.escape(label)}</a>'
        )
    return rendered


def text_of(obj):
    if obj["type"] == "mrkdwn":
        return mrkdwn(obj["text"])
    if obj["type"] == "plain_text":
        return html.escape(obj["text"])
    raise SystemExit(f"unknown text object {obj['type']!r}")


def block(b):
    kind = b["type"]
    if kind == "section":
        parts = []
        if "text" in b:
            parts.append(f'<div class="block">{text_of(b["text"])}</div>')
        if "fields" in b:
            cells = "".join(f"<div>{text_of(f)}</div>" for f in b["fields"])
            parts.append(f'<div class="block fields">{cells}</div>')
        return "".join(parts)
    if kind == "context":
        return f'<div class="block context">{" ".join(text_of(e) for e in b["elements"])}</div>'
    if kind == "actions":
        buttons = []
        for e in b["elements"]:
            if e["type"] != "button":
                raise SystemExit(f"unknown action element {e['type']!r}")
            style = e.get("style", "")
            buttons.append(f'<span class="button {style}">{text_of(e["text"])}</span>')
        return f'<div class="actions">{"".join(buttons)}</div>'
    raise SystemExit(f"unknown block {kind!r}")


def main():
    message = json.load(sys.stdin)
    body = "".join(block(b) for b in message["blocks"])
    sys.stdout.write(
        f"<!doctype html><meta charset=utf-8><style>{STYLE}</style>"
        f'<div class="msg"><div class="avatar">S</div><div>'
        f'<div><span class="name">Signoff</span><span class="app">APP</span></div>'
        f"{body}</div></div>"
    )


if __name__ == "__main__":
    main()
