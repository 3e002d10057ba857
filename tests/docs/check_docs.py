#!/usr/bin/python3
"""Checks README.md and docs/*.md against the real binary and the tree.

1. Every `sentry ...` command line shown in a code block (and in an inline
   code span that starts with `sentry `), and every MCP client config naming
   sentry, uses only flags that `sentry SUBCOMMAND --help` lists, with a value
   where the flag takes one. The binary's own help is the reference, so a
   flag renamed or removed in the code fails this check until the docs follow.
2. A sentry binary named by path is one the first command leaves:
   /usr/local/bin/sentry or build/sentry/sentry.
3. Every link is either a URL (http, https, mailto) or a file or directory
   inside the repository that exists; a link to a heading of a markdown file
   names a heading it has.

A command shown to be refused (an error's example) goes in a ```text block,
whose lines are not run through the parser (but a ```text block that opens
with a `sentry SUB ...` synopsis has each flag it lists checked).

usage: check_docs.py SENTRY_BINARY REPO_ROOT
       check_docs.py --self-test SENTRY_BINARY REPO_ROOT
           (proves that a made-up flag and an outside link fail the check)
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

BINARY_PATHS = {"sentry", "/usr/local/bin/sentry", "build/sentry/sentry"}
# Subcommands with their own --help of FlagSet lines.
SUBCOMMANDS = ("run", "serve", "mcp", "pool", "check", "syscalls")
OCI_COMMANDS = ("create", "start", "state", "kill", "delete", "list", "ps", "exec",
                "features", "spec", "run")


class Flags:
    """The flags of one command: name -> 'value' | 'switch' | 'optional'."""

    def __init__(self):
        self.kinds = {}

    def add(self, names, kind):
        for n in names:
            self.kinds[n] = kind


def parse_help_lines(text):
    """FlagSet help lines: '  -m,--memory SIZE   text' (indented <= 6)."""
    flags = Flags()
    for line in text.splitlines():
        if line.startswith("usage:"):  # sentry check [--json]: its flags are there alone
            for group in re.findall(r"\[([^\]]*)\]", line):
                for alt in group.split("|"):
                    words = alt.split()
                    if words and words[0].startswith("-"):
                        flags.add([words[0]], "value" if len(words) > 1 else "switch")
            continue
        m = re.match(r"^( {1,6})(-.*)$", line)
        if not m:
            continue
        spec = re.split(r"\s{2,}", m.group(2).replace(", -", ",-"))[0]
        words = spec.split(" ", 1)
        names = [n for n in words[0].split(",") if n.startswith("-")]
        kind = "switch"
        if "{" in words[0]:  # CLI11 prints an optional value's default: --flag{us}
            names = [re.sub(r"\{.*\}$", "", n) for n in names]
            kind = "optional"
        elif len(words) > 1 and words[1].strip():
            kind = "value"
        flags.add(names, kind)
    return flags


def parse_oci_usage(text):
    """The OCI runtime's usage: global flags as FlagSet-like lines, each
    command's flags as '[--flag VALUE]' groups after 'Commands:'."""
    head, _, commands = text.partition("Commands:")
    globals_ = parse_help_lines(head)
    per_command = {}
    current = None
    for line in commands.splitlines():
        m = re.match(r"^  (\w[\w-]*)\b", line)
        if m and m.group(1) in OCI_COMMANDS:
            current = per_command.setdefault(m.group(1), Flags())
        if current is None or not line.startswith(" "):
            continue
        for group in re.findall(r"\[([^\]]*)\]", line):
            for alt in group.split("|"):
                words = alt.split()
                if words and words[0].startswith("-"):
                    current.add([words[0]], "value" if len(words) > 1 else "switch")
    return globals_, per_command


class Reference:
    def __init__(self, binary):
        self.binary = binary
        self.sub = {}
        for sub in SUBCOMMANDS:
            out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True,
                                 timeout=30)
            if "usage:" not in out.stdout + out.stderr:  # (syscalls --help exits 125)
                raise SystemExit(f"check_docs: `{binary} {sub} --help` failed: {out.stderr}")
            self.sub[sub] = parse_help_lines(out.stdout + out.stderr)
        out = subprocess.run([binary, "--root", "/nonexistent-sentry-docs-check", "--help"],
                             capture_output=True, text=True, timeout=30)
        self.oci_globals, self.oci = parse_oci_usage(out.stdout + out.stderr)
        for f in self.sub.values():
            f.add(["-h", "--help"], "switch")


def check_flags(words, flags, stop_at_positional, what):
    """Errors for the flags of `words` (the command line after the command)."""
    errors = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            break
        if w.startswith("[") or w.endswith("]") or w in ("...", "|"):
            # a synopsis: [--flag VALUE] optional groups, placeholders
            inner = w.strip("[]|.")
            if inner.startswith("-"):
                name = inner.split("=", 1)[0]
                if name not in flags.kinds:
                    errors.append(f"{what}: no flag {name}")
                elif flags.kinds[name] == "value" and "=" not in inner and i < len(words) \
                        and not words[i].startswith("-"):
                    i += 1
            continue
        if not w.startswith("-") or w == "-":
            if stop_at_positional:
                break
            continue
        if w.startswith("--"):
            name, eq, _ = w.partition("=")
            kind = flags.kinds.get(name)
            if kind is None:
                errors.append(f"{what}: no flag {name}")
                continue
            if kind == "switch" and eq:
                errors.append(f"{what}: {name} takes no value")
            if kind == "value" and not eq:
                if i >= len(words):
                    errors.append(f"{what}: {name} needs a value")
                i += 1
            continue
        # -x, -xVALUE, or grouped switches -it
        name = w[:2]
        kind = flags.kinds.get(name)
        if kind is None:
            errors.append(f"{what}: no flag {name}")
            continue
        if kind == "value":
            if len(w) == 2:
                if i >= len(words):
                    errors.append(f"{what}: {name} needs a value")
                i += 1
            continue
        for c in w[2:]:
            if flags.kinds.get("-" + c) != "switch":
                errors.append(f"{what}: no switch -{c} in {w}")
    return errors


def check_command(words, ref, where):
    """words[0] is the binary's name or path."""
    what = f"{where}: `{' '.join(words)}`"
    if words[0] not in BINARY_PATHS:
        return [f"{what}: names a sentry binary the first command does not leave "
                f"(use /usr/local/bin/sentry or build/sentry/sentry)"]
    rest = words[1:]
    if not rest:
        return []
    if rest[0] in ("--help", "-h", "help", "--version", "version"):
        return []
    # The OCI runtime: global flags first, then a runc command.
    if rest[0].startswith("-") or rest[0].startswith("[") or (
            rest[0] in OCI_COMMANDS and rest[0] != "run"):
        i = 0
        errs = []
        while i < len(rest) and (rest[i].startswith("-") or rest[i].startswith("[")):
            w = rest[i].strip("[]")
            name = w.split("=", 1)[0]
            kind = ref.oci_globals.kinds.get(name)
            if name in ("--help", "--version"):
                return errs
            if kind is None:
                if rest[i].startswith("[") and not w.startswith("-"):
                    i += 1
                    continue
                return errs + [f"{what}: no global flag {name} (sentry --root DIR --help)"]
            i += 2 if kind == "value" and "=" not in w else 1
        if i >= len(rest):
            return errs
        cmd = rest[i]
        if cmd in ("COMMAND", "...") or cmd.startswith("COMMAND"):
            return errs
        if cmd not in ref.oci:
            return errs + [f"{what}: no OCI command {cmd}"]
        return errs + check_flags(rest[i + 1:], ref.oci[cmd], False, what)
    sub = rest[0]
    if sub not in ref.sub:
        return [f"{what}: no subcommand {sub}"]
    return check_flags(rest[1:], ref.sub[sub], sub == "run", what)


def shell_words(line):
    """The words of a shell line, operators ((, ), |, &&, ;, >...) as their own."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    return list(lex)


def commands_in_line(line):
    """The sentry command lines in one shell line (after joining `\\` lines)."""
    line = re.sub(r"^\s*\$\s+", "", line)  # a prompt
    try:
        words = shell_words(line)
    except ValueError:
        words = line.split()
    segments, seg = [], []
    for w in words:
        if w and all(c in "();<>|&" for c in w):
            segments.append(seg)
            seg = []
        else:
            seg.append(w)
    segments.append(seg)
    out = []
    for words in segments:
        while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or
                         words[0] in ("sudo", "exec", "time", "nohup", "then", "do", "$")):
            words = words[1:]
        if words and os.path.basename(words[0]) == "sentry":
            out.append(words)
    return out


def code_blocks(text):
    """(language, first line number, lines) of each fenced block."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^\s*```(\w*)", lines[i])
        if m:
            lang, start, body = m.group(1), i + 1, []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            blocks.append((lang, start + 1, body))
        i += 1
    return blocks


def json_commands(obj):
    if isinstance(obj, dict):
        cmd = obj.get("command")
        if isinstance(cmd, str) and os.path.basename(cmd) == "sentry":
            args = obj.get("args", [])
            yield [cmd] + [str(a) for a in args]
        for v in obj.values():
            yield from json_commands(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from json_commands(v)


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                result.add(s if n == 0 else f"{s}-{n}")
    return result


LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links(path, text, root):
    errors = []
    rel = os.path.relpath(path, root)
    stripped = re.sub(r"```.*?```", "", text, flags=re.S)
    stripped = re.sub(r"`[^`\n]*`", "", stripped)
    for m in LINK.finditer(stripped):
        target = m.group(1)
        line = text.count("\n", 0, text.find(m.group(0))) + 1
        where = f"{rel}:{line}: link {target}"
        if re.match(r"^(https?|mailto):", target):
            continue
        if re.match(r"^\w+:", target) or target.startswith("//"):
            errors.append(f"{where}: not a URL nor a file of the repository")
            continue
        file_part, _, anchor = target.partition("#")
        if file_part.startswith("/"):
            errors.append(f"{where}: an absolute path (outside the repository)")
            continue
        dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) \
            if file_part else path
        if os.path.commonpath([dest, os.path.realpath(root)]) != os.path.realpath(root):
            errors.append(f"{where}: points outside the repository")
            continue
        if not os.path.exists(dest):
            errors.append(f"{where}: no such file")
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            errors.append(f"{where}: no heading #{anchor} in {os.path.relpath(dest, root)}")
    for m in re.finditer(r"\.\./shared\b|/work/shared", text):
        line = text.count("\n", 0, m.start()) + 1
        errors.append(f"{rel}:{line}: names {m.group(0)}, outside the repository")
    return errors


def check_listing(body, ref, where):
    """A text block that starts with a synopsis `sentry SUB ...` and lists
    flags below it (`  --json  what it does`): each flag listed must exist."""
    m = re.match(r"^sentry (\w+)\b", body[0]) if body else None
    if not m or m.group(1) not in ref.sub:
        return []
    flags = ref.sub[m.group(1)]
    errors = []
    for n, line in enumerate(body[1:], 1):
        for name in re.findall(r"^\s+(?:(-\w),\s*)?(--[\w-]+)", line):
            for flag in name:
                if flag and flag not in flags.kinds:
                    errors.append(f"{where}+{n}: the listing names {flag}, which "
                                  f"`sentry {m.group(1)} --help` does not list")
    return errors


# Where an engine or a client is told which binary to start.
BINARY_NAMED = re.compile(
    r"(?:--runtime[= ]|--runc-binary[= ]|BinaryName\s*=\s*\"|\"command\":\s*\"|--cli\s+)"
    r"([^\s\"']+)")


def check_binaries(text, rel):
    """An engine's runtime, a shim's binary, an MCP client's command: a sentry
    binary the first command leaves (the MCP Inspector's bare `sentry` failed
    with spawn ENOENT where nothing installed one)."""
    errors = []
    for m in BINARY_NAMED.finditer(text):
        name = m.group(1)
        if os.path.basename(name) == "sentry" and name not in BINARY_PATHS - {"sentry"}:
            line = text.count("\n", 0, m.start()) + 1
            errors.append(f"{rel}:{line}: names the binary {name}: use /usr/local/bin/sentry "
                          f"(scripts/install.sh installs it) or build/sentry/sentry")
    return errors


def check_file(path, root, ref):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rel = os.path.relpath(path, root)
    errors = check_links(path, text, root) + check_binaries(text, rel)
    commands = 0
    for lang, first, body in code_blocks(text):
        if lang == "text":
            errors += check_listing(body, ref, f"{rel}:{first}")
            continue
        if lang in ("yaml", "toml", "python", "c", "cpp"):
            continue
        if lang == "json":
            try:
                obj = json.loads("\n".join(body))
            except ValueError:
                continue
            for words in json_commands(obj):
                commands += 1
                errors += check_command(words, ref, f"{rel}:{first}")
            continue
        prompted = any(re.match(r"^\s*\$\s", line) for line in body)
        joined, start = "", first
        for n, line in enumerate(body):
            if not joined:
                if prompted and not re.match(r"^\s*\$\s", line):
                    continue  # a console block: lines without a prompt are output
                start = first + n
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            joined += line
            try:
                shell_words(joined)
            except ValueError:  # a quote that a later line closes, as in a shell
                joined += "\n"
                continue
            for words in commands_in_line(joined):
                commands += 1
                errors += check_command(words, ref, f"{rel}:{start}")
            joined = ""
    outside = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"`((?:/usr/local/bin/|build/sentry/)?sentry [^`]+)`", outside):
        line = text.count("\n", 0, text.find(m.group(0))) + 1
        for words in commands_in_line(m.group(1)):
            if len(words) > 1 and words[1] not in SUBCOMMANDS + OCI_COMMANDS \
                    and not words[1].startswith("-"):
                continue  # prose such as `sentry run: --timeout soon: ...`
            commands += 1
            errors += [e for e in check_command(words, ref, f"{rel}:{line}")
                       if not e.endswith("needs a value")]  # `sentry run --pool`: a mention
    return errors, commands


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def check_tree(binary, root, files=None):
    ref = Reference(binary)
    errors, commands = [], 0
    for path in files or doc_files(root):
        e, c = check_file(path, root, ref)
        errors += e
        commands += c
    return errors, commands


def self_test(binary, root):
    """A doc with a made-up flag, a missing file and an outside link must fail;
    the same doc without them must pass."""
    good = ("# T\n\n## A heading\n\n```sh\nsentry run --json -m 256m -it -- python3 -c 1\n"
            "sentry serve --listen 127.0.0.1:0 --token-file t\n```\n"
            "See [a](#a-heading) and [the tests](tests/security/README.md).\n")
    cases = {
        "a flag run does not have": "```sh\nsentry run --no-such-flag -- true\n```\n",
        "a flag serve does not have": "```sh\nsentry serve --listen 127.0.0.1:0 --pool x\n```\n",
        "a short flag that does not exist": "```sh\nsentry run -Q -- true\n```\n",
        "a value flag without its value": "```sh\nsentry run --timeout\n```\n",
        "a switch given a value": "```sh\nsentry run --json=yes -- true\n```\n",
        "a subcommand that does not exist": "```sh\nsentry frobnicate --x\n```\n",
        "an OCI command's made-up flag": "```sh\nsentry --root /tmp/s spec --no-such\n```\n",
        "a made-up flag in an inline span": "Use `sentry mcp --sessions 4`.\n",
        "a made-up flag in a flag listing":
            "```text\nsentry run [FLAGS] -- CMD\n  --json   one object\n  --jsonl  lines\n```\n",
        "an MCP config with a bad flag":
            '```json\n{"mcpServers": {"s": {"command": "/usr/local/bin/sentry", '
            '"args": ["mcp", "--bogus"]}}}\n```\n',
        "a binary the first command does not install":
            "```sh\n/usr/bin/sentry run -- true\n```\n",
        "an engine told a binary nothing installs":
            "```sh\npodman --runtime /usr/bin/sentry run --rm --rootfs /r true\n```\n",
        "an MCP Inspector told a bare sentry":
            "```sh\nnpx @modelcontextprotocol/inspector --cli sentry mcp --method tools/list\n```\n",
        "a link outside the repository": "[design](../shared/DESIGN.md)\n",
        "a link to a missing file": "[x](docs/no-such-file.md)\n",
        "a link to a missing heading": "[x](#no-such-heading)\n",
    }
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "tests", "security"))
        open(os.path.join(tmp, "tests", "security", "README.md"), "w").close()

        def run(text):
            with open(os.path.join(tmp, "README.md"), "w") as f:
                f.write(text)
            return check_tree(binary, tmp)[0]

        errs = run(good)
        if errs:
            failures.append(f"the good doc fails: {errs}")
        for name, bad in cases.items():
            errs = run(good + bad)
            print(f"{name}: {'caught: ' + errs[0] if errs else 'NOT CAUGHT'}")
            if not errs:
                failures.append(f"{name} was not caught")
    return failures


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        failures = self_test(os.path.abspath(args[1]), os.path.abspath(args[2]))
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    if len(args) != 2:
        print(__doc__)
        return 2
    binary, root = os.path.abspath(args[0]), os.path.abspath(args[1])
    errors, commands = check_tree(binary, root)
    for e in errors:
        print("FAIL:", e)
    files = len(doc_files(root))
    print(f"{files} files, {commands} sentry command lines checked, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
