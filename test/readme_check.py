#!/usr/bin/env python3
"""make readme-check: runs every command the README shows.

- Every ```sh block runs, in order, as one bash script (set -e) from the
  top of the tree; it must exit 0. A block whose commands install or remove
  things does so for real: the check runs as root, and make install goes to
  a scratch DESTDIR.
- A ```text block that follows a ```sh block with nothing but blank lines
  between is what the block's last command prints (stdout and stderr). It
  must match line by line, with every number taken as any number, runs of
  blanks as one blank, and the tree's own path written /path/to/bufsel.
- Every `make TARGET` the README names is a target of the Makefile, and
  every row of the "Building and testing" table marked CI is run by .ci/run.

Usage: test/readme_check.py [README.md]
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(text):
    """(info, body, first line number, whether only blanks separate it from the previous block)."""
    out, lines, i, last_end = [], text.split("\n"), 0, None
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i, m.group(1), []
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        adjacent = last_end is not None and all(not l.strip() for l in lines[last_end + 1:start])
        out.append((info, body, start + 1, adjacent))
        last_end = i
        i += 1
    return out


def commands(body):
    """The block's commands: comment lines dropped, backslash continuations joined."""
    cmds, cur = [], ""
    for line in body:
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        cmds.append(cur)
        cur = ""
    if cur:
        cmds.append(cur)
    return cmds


def shape(text):
    text = text.replace(ROOT, "/path/to/bufsel")
    out = []
    for line in text.strip("\n").split("\n"):
        line = re.sub(r"\d+(\.\d+)?", "N", line)
        out.append(re.sub(r"\s+", " ", line).strip())
    return out


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")
    text = open(readme).read()
    if os.geteuid() != 0:
        sys.exit("readme-check: the README installs the package (dpkg -i): run as root")
    st = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "bufsel"], capture_output=True, text=True).stdout
    if "installed" in st.split():
        sys.exit("readme-check: the bufsel package is installed here, and the README removes it: dpkg -r bufsel first")
    fails = 0
    scratch = tempfile.mkdtemp(prefix="bufsel-readme.")
    env = dict(os.environ, DESTDIR=os.path.join(scratch, "destdir"))
    bl = blocks(text)
    ran = 0
    for n, (info, body, lineno, _) in enumerate(bl):
        if info != "sh":
            continue
        cmds = commands(body)
        shown = None
        if n + 1 < len(bl) and bl[n + 1][0] == "text" and bl[n + 1][3]:
            shown = bl[n + 1][1]
        log, last = os.path.join(scratch, "log"), os.path.join(scratch, "last")
        script = "set -e\n"
        if len(cmds) > 1:
            script += "{\n" + "\n".join(cmds[:-1]) + "\n} >%s 2>&1\n" % log
        script += "{\n" + cmds[-1] + "\n} >%s 2>&1\n" % last
        print("readme-check: line %d: %s" % (lineno, " ; ".join(cmds)), flush=True)
        r = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env)
        ran += 1
        got = open(last).read() if os.path.exists(last) else ""
        if r.returncode:
            before = open(log).read() if os.path.exists(log) else ""
            print("readme-check: FAIL line %d: exit status %d\n%s%s" % (lineno, r.returncode, before[-3000:], got[-3000:]))
            fails += 1
            continue
        if shown is not None:
            want, have = shape("\n".join(shown)), shape(got)
            if want != have:
                print("readme-check: FAIL line %d: the output differs from the README's (numbers aside)" % lineno)
                for i in range(max(len(want), len(have))):
                    w = want[i] if i < len(want) else "(none)"
                    h = have[i] if i < len(have) else "(none)"
                    if w != h:
                        print("  README line %d:\n    shown: %s\n    got:   %s" % (i + 1, w, h))
                        break
                print("  the whole output:\n" + got)
                fails += 1

    targets = set(re.findall(r"`make ([a-z][a-z0-9-]*)", text))
    for t in sorted(targets):
        r = subprocess.run(["make", "-n", t], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            print("readme-check: FAIL the README names make %s, which the Makefile does not have: %s" % (t, r.stderr.strip()))
            fails += 1
    ci = open(os.path.join(ROOT, ".ci/run")).read()
    sect = text[text.index("## Building and testing"):]
    for row in re.findall(r"^\| `make( [a-z-]*)?`[^\n]*\| CI \|$", sect, re.M):
        want = ("make" + row).strip()
        if not re.search(r"^" + re.escape(want) + r"(\s|$)", ci, re.M) and want != "make":
            print("readme-check: FAIL the README says CI runs %s; .ci/run does not" % want)
            fails += 1
    print("readme-check: %d blocks run, %d make targets named, %d failed" % (ran, len(targets), fails))
    subprocess.run(["rm", "-rf", scratch])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
