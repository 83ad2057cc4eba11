"""The `build/olmo` command lines shown in README.md and docs/**/*.md, for the tests that parse
them (tests/cli/cli_test.py) and run them (tests/cli/doc_lines_test.py).

command_lines(src) -> [DocLine]: fenced code blocks (continuations joined, VAR="..." assignments
of the block substituted, comments, redirections and [optional] parts dropped) and inline code
spans that start with build/olmo. DocLine.prefix holds what comes before build/olmo ($M of a
block, `mpirun -np 2`, `exec`), .argv what follows it, .comment the line's trailing comment
(where the docs mark a line that cannot run on one machine).
"""
import glob
import os
import re
import shlex
from collections import namedtuple

DocLine = namedtuple("DocLine", "where prefix argv comment")


def _comment(text):
    """The text after an unquoted '#' (shlex's comment rule), or ""."""
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=False)
        lex.whitespace_split, lex.commenters = True, ""
        words = list(lex)
    except ValueError:
        return ""
    for i, w in enumerate(words):
        if w.startswith("#"):
            return " ".join(words[i:])[1:].strip()
    return ""


def command_lines(src):
    found = []
    files = [os.path.join(src, "README.md")] + sorted(
        glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))

    def add(where, text, env):
        text = re.sub(r"\[[^\]]*\]", "", text)  # synopsis: [--limit N] is optional
        for k, v in env.items():
            text = text.replace("$" + k, v)
        comment = _comment(text)
        try:
            words = shlex.split(text, comments=True)
        except ValueError:
            return
        for stop in (">", "|", "&&", ";", "2>&1"):
            if stop in words:
                words = words[:words.index(stop)]
        if "build/olmo" in words:
            i = words.index("build/olmo")
            found.append(DocLine(where, words[:i], words[i + 1:], comment))

    for path in files:
        rel = os.path.relpath(path, src)
        lines = open(path, encoding="utf-8").read().split("\n")
        inblock, buf, start, env = False, "", 0, {}
        for i, line in enumerate(lines, 1):
            if line.strip().startswith("```"):
                inblock, buf, env = not inblock, "", {}
                continue
            if not inblock:
                for span in re.findall(r"`(build/olmo [^`]+)`", line):
                    add(f"{rel}:{i}", span, {})
                continue
            m = re.fullmatch(r"\s*([A-Z_]+)=\"(.*)\"\s*", line)
            if m:
                env[m.group(1)] = m.group(2)
                continue
            if not buf and "build/olmo " not in line:
                continue
            buf, start = (buf + " " + line.strip()) if buf else line.strip(), start if buf else i
            if buf.endswith("\\"):
                buf = buf[:-1]
                continue
            if buf.count("'") % 2 or buf.count('"') % 2:  # a quoted value goes on
                continue
            add(f"{rel}:{start}", buf, env)
            buf = ""
    return found
