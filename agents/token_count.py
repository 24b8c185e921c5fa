"""Client-side token counts for servers that send no `usage` (`--ak tokenizer=PATH`).

PATH is a Hugging Face `tokenizers` JSON file or a model folder holding `tokenizer.json`
(the file the model was published with). Counted, as AIPerf counts its inputs: the prompt is
the text of every message (content and echoed tool-call arguments) plus the tool schemas as
JSON, without the chat template's own tokens (the template lives on the server), so a client
count runs a few tokens per message below the server's; the completion is the reply's text and
tool-call names and arguments. Records say `token_source="client"` so nobody mistakes them
for the server's usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class TokenizerError(ValueError):
    """The tokenizer named by the option cannot be loaded."""


class TokenCounter:
    def __init__(self, path: str | Path) -> None:
        from tokenizers import Tokenizer

        file = Path(path)
        if file.is_dir():
            file = file / "tokenizer.json"
        try:
            self._tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # missing file, not a tokenizers JSON
            raise TokenizerError(f"tokenizer {path}: cannot load {file} ({exc})") from None

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids) if text else 0

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> int:
        parts: list[str] = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            for call in message.get("tool_calls") or ():
                fn = call.get("function", {})
                parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
        if tools:
            parts.append(json.dumps(tools))
        return sum(self.count(p) for p in parts)

    def completion(self, content: str, tool_calls: list[dict[str, str]]) -> int:
        text = [content] + [f"{t.get('name', '')} {t.get('arguments', '')}" for t in tool_calls]
        return sum(self.count(p) for p in text if p)
