"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol, scripted per
test: each request takes the next step of the script (an answer, a status, a stall, garbage)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


KEY = "<<KEY>>"  # in a step's content: replaced by the key the request carried (an endpoint that echoes it)


@dataclass
class Step:
    kind: str  # "answer", "status", "stall", "garbage", "empty", "drip"
    content: str = ""
    status: int = 200
    headers: dict = field(default_factory=dict)
    seconds: float = 0.0


def answer(content: str) -> Step:
    return Step("answer", content)


def status(code: int, message: str = "", **headers: str) -> Step:
    return Step("status", content=message, status=code, headers={k.replace("_", "-"): v for k, v in headers.items()})


def stall(seconds: float) -> Step:
    return Step("stall", seconds=seconds)


def drip(seconds: float) -> Step:
    """An answer sent one byte at a time, `seconds` apart."""
    return Step("drip", seconds=seconds)


class FakeLLM:
    def __init__(self, steps: list[Step] | None = None, default: Step | None = None) -> None:
        self.steps = list(steps or [])
        self.default = default or Step("garbage", content="no more steps scripted")
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake.lock:
                    fake.requests.append({"path": self.path, "body": body,
                                          "headers": {k.lower(): v for k, v in self.headers.items()}})
                    step = fake.steps.pop(0) if fake.steps else fake.default
                key = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if step.kind == "stall":
                    time.sleep(step.seconds)
                    step = Step("answer", "```cuda\n__global__ void late() {}\n```")
                if step.kind == "drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    try:
                        for _ in range(100000):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(step.seconds)
                    except OSError:
                        pass
                    return
                if step.kind == "status":
                    message = step.content.replace(KEY, key) if step.content else f"scripted {step.status}"
                    payload = json.dumps({"error": {"message": message, "type": "scripted"}}).encode()
                    self.send_response(step.status)
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if step.kind == "garbage":
                    payload = b"this is not json"
                elif step.kind == "empty":
                    payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                          "choices": []}).encode()
                else:
                    payload = json.dumps({
                        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "m"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": step.content.replace(KEY, key)}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def prompts(self) -> list[str]:
        return [r["body"]["messages"][-1]["content"] for r in self.requests]

    def __enter__(self) -> "FakeLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
