#!/usr/bin/env python3
"""Lengths of the C++ functions and classes in the files given.

  function_lengths.py [--max-function N] [--top K] [--classes] FILE...

A function's length is the number of lines from the line of its body's
opening brace to the line of its closing brace. Functions are found by
their bodies: a brace that follows a parameter list (and its qualifiers,
or a constructor's initializer list) outside any other function body;
lambdas and local classes count toward the function that holds them.
Comments, string and character literals are blanked first, so braces in
them do not count.

With --max-function, prints each function longer than N as
"FILE:LINE: NAME is L lines (more than N)" and exits 1 if there is one.
With --top, prints the K longest functions (and with --classes, classes).
Standard library only: scripts/check-style.sh runs it with any python3.
"""

import argparse
import re
import sys

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return"}
QUALIFIERS = re.compile(
    r"\)\s*(?:const|volatile|noexcept(?:\s*\([^()]*\))?|override|final|&&|&|mutable|"
    r"->\s*[\w:<>,\s*&]+|\s)*$")


def blank(text):
    """`text` with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_before(text, brace):
    """The text of the declaration that a '{' at `brace` opens."""
    start = max(text.rfind(";", 0, brace), text.rfind("{", 0, brace), text.rfind("}", 0, brace))
    return text[start + 1:brace]


def is_function(header):
    h = header.strip()
    if not h or h.startswith("#"):
        return False
    # A constructor's initializer list: drop it to find the parameter list.
    m = re.search(r"\)\s*(?:noexcept\s*)?:(?!:)", h)
    if m:
        h = h[:m.start() + 1]
    if not QUALIFIERS.search(h) and not h.endswith(")"):
        return False
    name = re.search(r"([~\w:]+|operator\s*[^\s(]+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)[^()]*$", h)
    if not name:
        return False
    word = name.group(1).split("::")[-1]
    if word in CONTROL or h.rstrip().endswith("]") or re.search(r"\]\s*\(", h):
        return False
    if re.search(r"(^|[\s(,=])(?:\[[^\]]*\]\s*)(\([^()]*\))?", h) and "[" in h.split("(")[0]:
        return False
    return True


def scan(path):
    """(functions, classes): lists of (length, line, name)."""
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    functions, classes = [], []
    stack = []  # (kind, line, name, offset)
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            inside = any(kind == "function" for kind, _, _, _ in stack)
            header = header_before(text, i)
            kind = "block"
            name = ""
            if not inside and is_function(header):
                kind = "function"
                m = re.search(r"([~\w:]+|operator\s*[^\s(]+)\s*\(", header.split(") :")[0])
                name = m.group(1) if m else "?"
            elif re.search(r"\b(class|struct)\s+(\w+)[^;()]*$", header):
                kind = "class"
                name = re.search(r"\b(?:class|struct)\s+(\w+)", header).group(1)
            stack.append((kind, line, name, i))
        elif c == "}" and stack:
            kind, start, name, _ = stack.pop()
            if kind == "function":
                functions.append((line - start + 1, start, name))
            elif kind == "class":
                classes.append((line - start + 1, start, name))
    return functions, classes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-function", type=int)
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--classes", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    all_functions, all_classes, over = [], [], []
    for path in args.files:
        functions, classes = scan(path)
        for length, line, name in functions:
            all_functions.append((length, f"{path}:{line}", name))
            if args.max_function is not None and length > args.max_function:
                over.append(f"{path}:{line}: {name} is {length} lines "
                            f"(more than {args.max_function})")
        for length, line, name in classes:
            all_classes.append((length, f"{path}:{line}", name))
    for o in over:
        print(o)
    if args.top:
        for length, where, name in sorted(all_functions, reverse=True)[:args.top]:
            print(f"{length:5d}  {name}  {where}")
        if args.classes:
            print("classes:")
            for length, where, name in sorted(all_classes, reverse=True)[:args.top]:
                print(f"{length:5d}  {name}  {where}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
