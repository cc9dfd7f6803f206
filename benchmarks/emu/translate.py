#!/usr/bin/env python3
"""translate.py SRC DST: rewrite CUDA kernel launches for the benchmark emulator.

    name<<<grid, block[, shared[, stream]]>>>(args);
becomes
    emu_launch("name", grid, block[, shared[, stream]], [&]() { name(args); });

Everything else is left as it is, and line numbers are kept (a #line
directive names the original file), so compiler messages point at the source.
"""
import re
import sys


def matching_paren(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise SystemExit("translate.py: unbalanced parentheses after a kernel launch")


def translate(text):
    out = []
    pos = 0
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\s*<<<", text):
        if m.start() < pos:
            continue
        name = m.group(1)
        cfg_end = text.index(">>>", m.end())
        config = text[m.end():cfg_end]
        paren = cfg_end + 3
        while text[paren].isspace():
            paren += 1
        if text[paren] != "(":
            raise SystemExit("translate.py: no argument list after %s<<<...>>>" % name)
        close = matching_paren(text, paren)
        args = text[paren + 1:close]
        out.append(text[pos:m.start()])
        out.append('emu_launch("%s", %s, [&]() { %s(%s); })' % (name, config.strip(), name, args))
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: translate.py SRC DST")
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        text = f.read()
    with open(dst, "w") as f:
        f.write('#line 1 "%s"\n' % src)
        f.write(translate(text))


if __name__ == "__main__":
    main()
