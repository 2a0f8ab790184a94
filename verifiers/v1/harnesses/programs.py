"""Agent programs the built-in harnesses run inside a runtime: standard-library Python only, so
they run wherever ``python3`` does. Each reads its input (a JSON file named by ``argv[1]``) and
talks to the model at ``$OPENAI_BASE_URL`` with ``$OPENAI_API_KEY``."""

from __future__ import annotations

__all__ = ["TOOL_LOOP_PROGRAM"]

#: A tool-calling chat loop: offers ``bash`` (and ``edit`` when asked), runs each call the model
#: makes, and ends when the model answers without calling a tool or after ``max_steps`` calls.
#: Input keys: ``messages`` (the opening conversation), ``tools`` (names), ``max_steps``,
#: ``command_timeout`` (seconds per bash command), ``max_output`` (characters kept per result).
#: With ``$VF_TOOL_INTERCEPTION_URL`` set, the program asks there before running each call
#: (``{tool_call_id, name, arguments}``): ``deny`` gives the result to record instead of running
#: it, ``stop`` ends the program.
TOOL_LOOP_PROGRAM = r"""
import json, os, subprocess, sys, urllib.error, urllib.request

cfg = json.load(open(sys.argv[1]))
BASE = os.environ["OPENAI_BASE_URL"].rstrip("/")
HEADERS = {"Content-Type": "application/json",
           "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")}
MODEL = os.environ.get("OPENAI_MODEL", "model")
CAP = int(cfg.get("max_output", 16000))
SPECS = {
    "bash": {"description": "Run a shell command in the workspace; returns its exit code and output.",
             "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                            "required": ["command"]}},
    "edit": {"description": "Replace the single occurrence of old_text with new_text in a file.",
             "parameters": {"type": "object", "properties": {
                 "path": {"type": "string"}, "old_text": {"type": "string"},
                 "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"]}},
}
TOOLS = [{"type": "function", "function": {"name": n, **SPECS[n]}} for n in cfg.get("tools", ["bash"])]


def clip(text):
    return text if len(text) <= CAP else text[: CAP // 2] + "\n[... cut ...]\n" + text[-CAP // 2:]


def bash(args):
    try:
        p = subprocess.run(["/bin/sh", "-c", args["command"]], capture_output=True, text=True,
                           timeout=float(cfg.get("command_timeout", 120)))
    except subprocess.TimeoutExpired:
        return "error: the command timed out"
    return clip("exit code %d\n%s%s" % (p.returncode, p.stdout, p.stderr))


def edit(args):
    try:
        with open(args["path"]) as f:
            text = f.read()
    except OSError as e:
        return "error: %s" % e
    count = text.count(args["old_text"])
    if count != 1:
        return "error: old_text occurs %d times in %s; it must occur exactly once" % (count, args["path"])
    with open(args["path"], "w") as f:
        f.write(text.replace(args["old_text"], args["new_text"]))
    return "edited %s" % args["path"]


RUN = {"bash": bash, "edit": edit}


HOOK = os.environ.get("VF_TOOL_INTERCEPTION_URL")


def gate(call):
    fn = call.get("function", {})
    try:
        arguments = json.loads(fn.get("arguments") or "{}")
    except ValueError:
        arguments = fn.get("arguments")
    body = json.dumps({"tool_call_id": call.get("id", ""), "name": fn.get("name", ""),
                       "arguments": arguments}).encode()
    req = urllib.request.Request(HOOK, data=body, headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            decision = json.loads(r.read())
    except urllib.error.HTTPError as e:
        sys.stderr.write("tool gate failed: HTTP %d %s\n" % (e.code, e.read()[:500]))
        sys.exit(3)
    if decision.get("action") == "stop":
        sys.exit(0)
    return decision


def ask(messages):
    body = json.dumps({"model": MODEL, "messages": messages, "tools": TOOLS}).encode()
    req = urllib.request.Request(BASE + "/chat/completions", data=body, headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            return json.loads(r.read())["choices"][0]["message"]
    except urllib.error.HTTPError as e:
        sys.stderr.write("model call failed: HTTP %d %s\n" % (e.code, e.read()[:500]))
        sys.exit(0 if e.code == 503 else 3)


messages = cfg["messages"]
for _ in range(int(cfg.get("max_steps", 50))):
    msg = ask(messages)
    calls = msg.get("tool_calls") or []
    turn = {"role": "assistant", "content": msg.get("content")}
    if msg.get("reasoning_content") is not None:
        turn["reasoning_content"] = msg["reasoning_content"]
    if calls:
        turn["tool_calls"] = calls
    messages.append(turn)
    if not calls:
        break
    for call in calls:
        fn = call.get("function", {})
        name = fn.get("name", "")
        if HOOK:
            decision = gate(call)
            if decision.get("action") == "deny":
                messages.append(decision["message"])
                continue
        try:
            out = RUN[name](json.loads(fn.get("arguments") or "{}"))
        except KeyError as e:
            out = "error: unknown tool or missing argument %s" % e
        except Exception as e:
            out = "error: %s" % e
        messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "name": name,
                         "content": out})
"""
