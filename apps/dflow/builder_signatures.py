#!/usr/bin/env python3
"""Writes the C++ builder signatures of ops/*.h as a C++ table for `dflow ops`.

usage: builder_signatures.py OUTPUT HEADER...

A builder is a function of namespace dflow::ops taking `const Scope& scope`
first (`Output MatMul(const Scope& scope, const Input& a, ...)`); an
`...Attrs` struct is listed with its fields, so that the optional arguments
can be read where the op is described. Comments are dropped from signatures
and kept on struct fields.
"""
import os
import re
import sys

BUILDER = re.compile(r"^([A-Za-z_][\w:<>*, ]*?[\w>*])\s+([A-Z]\w*)\((const Scope& \w+(?:[^;{]|\{\})*?)\)\s*;", re.M | re.S)
STRUCT = re.compile(r"^struct (\w+Attrs) \{\n(.*?)^\};", re.M | re.S)


def without_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def one_line(text):
    return " ".join(text.split())


def cpp_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    output, headers = sys.argv[1], sys.argv[2:]
    builders, structs = [], []
    for path in sorted(headers):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        header = "ops/" + os.path.basename(path)
        for match in BUILDER.finditer(without_comments(text)):
            result, name, params = match.groups()
            builders.append((name, f"{one_line(result)} ops::{name}({one_line(params)})", header))
        for match in STRUCT.finditer(text):
            fields = [one_line(line) for line in match.group(2).splitlines() if line.strip()]
            structs.append((match.group(1), fields))
    with open(output, "w", encoding="utf-8") as out:
        out.write("// Written by apps/dflow/builder_signatures.py from ops/*.h; do not edit.\n")
        out.write("const BuilderSignature kBuilderSignatures[] = {\n")
        for name, signature, header in builders:
            out.write(f"    {{{cpp_string(name)}, {cpp_string(signature)}, {cpp_string(header)}}},\n")
        out.write("};\nconst AttrsStruct kAttrsStructs[] = {\n")
        for name, fields in structs:
            out.write(f"    {{{cpp_string(name)}, {{{', '.join(cpp_string(f) for f in fields)}}}}},\n")
        out.write("};\n")


if __name__ == "__main__":
    main()
