"""Helpers for the audit tests: GSM8K items, reading reports, and a
scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GSM8K_JUDGE = REPO / "examples" / "gsm8k" / "rubric.rbg"
GSM8K_ITEMS = REPO / "examples" / "gsm8k" / "items.jsonl"


def gsm8k_items(problems: int = 4) -> list[dict]:
    """The first `problems` GSM8K problems' items (full, bare and early variants)."""
    rows = [json.loads(line) for line in GSM8K_ITEMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[: problems * 3]


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


class Scripted:
    """A loopback OpenAI-compatible server whose replies come from `answer`:
    answer(role, body) -> reply text, where role is generator, validator,
    planner, summary or judge (from the system message). Every request body
    and Authorization header is kept."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[dict] = []
        self.headers: list[str] = []
        self.lock = threading.Lock()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"data": [{"id": "scripted"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with scripted.lock:
                    scripted.requests.append(body)
                    scripted.headers.append(self.headers.get("Authorization", ""))
                text = scripted.answer(role_of(body), body)
                self._send(
                    200,
                    {
                        "model": "scripted",
                        "choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def calls(self, role: str) -> list[dict]:
        return [b for b in self.requests if role_of(b) == role]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def role_of(body: dict) -> str:
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    for prefix, role in (
        ("You rewrite texts", "generator"),
        ("You check rewrites", "validator"),
        ("You design robustness", "planner"),
        ("You summarise", "summary"),
    ):
        if system.startswith(prefix):
            return role
    return "judge"


def user_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
