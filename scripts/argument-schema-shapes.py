#!/usr/bin/env python3
"""Count the JSON Schema shapes the argument-schema fixtures use, tool by tool.

`fixtures/argument-schemas/README.md` carries this script's table: for each shape, how many tools
(and files) have at least one subschema of that shape anywhere in their `inputSchema` (nested
properties, `$defs`, array items and the branches of `anyOf`/`oneOf`/`allOf` included). The
value solver of issue 49 must realise every one of these shapes, so the table says which are
exercised by real schemas and how often. Run it from the repository root:

    python3 scripts/argument-schema-shapes.py fixtures/argument-schemas

It prints the Markdown tables (per file, then per shape). Standard library only.

Only schema positions are walked (the values of `properties`, `items`, `anyOf`, …), never data
positions (`default`, `enum`, `const`, `examples`), so a property named `pattern` or a default
value holding `{"type": "null"}` is not counted as a shape.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Schema = dict[str, Any]

# Keywords whose value is one schema.
ONE = ("not", "if", "then", "else", "contains", "propertyNames", "additionalItems", "unevaluatedItems")
# Keywords whose value is a list of schemas.
LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
# Keywords whose value is a map from names to schemas.
MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def subschemas(s: Any) -> Iterator[Schema]:
    """Every schema object reachable from `s` through schema keywords, `s` included."""
    if not isinstance(s, dict):
        return
    yield s
    for k in ONE:
        yield from subschemas(s.get(k))
    for k in LIST:
        v = s.get(k)
        if isinstance(v, list):
            for x in v:
                yield from subschemas(x)
    for k in MAP:
        v = s.get(k)
        if isinstance(v, dict):
            for x in v.values():
                yield from subschemas(x)
    items = s.get("items")
    if isinstance(items, list):  # draft-07 tuple form
        for x in items:
            yield from subschemas(x)
    else:
        yield from subschemas(items)
    for k in ("additionalProperties", "unevaluatedProperties"):
        yield from subschemas(s.get(k))


def is_null(s: Any) -> bool:
    return isinstance(s, dict) and (s.get("type") == "null" or s.get("const", 0) is None)


# Shapes shown by the presence of any one of these keywords.
BY_KEYWORD: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("allOf", ("allOf",)),
    ("not", ("not",)),
    ("const", ("const",)),
    ("enum", ("enum",)),
    ("$ref", ("$ref",)),
    ("$defs/definitions", ("$defs", "definitions")),
    ("discriminator", ("discriminator",)),
    ("pattern", ("pattern",)),
    ("format", ("format",)),
    ("minLength/maxLength", ("minLength", "maxLength")),
    ("minimum/maximum", ("minimum", "maximum")),
    ("exclusiveMinimum/exclusiveMaximum", ("exclusiveMinimum", "exclusiveMaximum")),
    ("multipleOf", ("multipleOf",)),
    ("minItems/maxItems", ("minItems", "maxItems")),
    ("patternProperties", ("patternProperties",)),
    ("minProperties/maxProperties", ("minProperties", "maxProperties")),
    ("default", ("default",)),
    ("if/then/else", ("if",)),
)


def shapes_of(s: Schema, root: bool) -> set[str]:
    """The shapes one subschema shows (`root`: the tool's `inputSchema` itself)."""
    out = {shape for shape, keys in BY_KEYWORD if any(k in s for k in keys)}
    for k in ("anyOf", "oneOf"):
        branches = s.get(k)
        if isinstance(branches, list):
            if any(is_null(b) for b in branches):
                out.add(f"{k} with null (Optional)")
            if sum(not is_null(b) for b in branches) > 1:
                out.add(f"{k} of 2+ non-null branches (union)")
    t = s.get("type")
    types = t if isinstance(t, list) else [t]
    if isinstance(t, list):
        out.add("type list" + (" with null" if "null" in t else ""))
    if "format" in s:
        out.add(f"format: {s['format']}")
    if "integer" in types:
        out.add("type integer")
    if "number" in types:
        out.add("type number")
    if "array" in types or "items" in s or "prefixItems" in s:
        out.add("array")
    if "prefixItems" in s or isinstance(s.get("items"), list):
        out.add("prefixItems (tuple)")
    if s.get("uniqueItems") is True:
        out.add("uniqueItems")
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        out.add("additionalProperties schema (dict)")
    if ap is False:
        out.add("additionalProperties false")
    if not root and ("object" in types or "properties" in s):
        out.add("nested object")
    return out


# Every shape `shapes_of` can report (bar the per-value `format: …` rows), so that a shape no tool
# uses is printed with 0 rather than left out.
KNOWN = (
    "anyOf with null (Optional)", "oneOf with null (Optional)", "anyOf of 2+ non-null branches (union)",
    "oneOf of 2+ non-null branches (union)", "type list", "type list with null", "allOf", "not", "const",
    "enum", "$ref", "$defs/definitions", "discriminator", "pattern", "format", "minLength/maxLength",
    "minimum/maximum", "exclusiveMinimum/exclusiveMaximum", "multipleOf", "type integer", "type number",
    "array", "prefixItems (tuple)", "minItems/maxItems", "uniqueItems", "additionalProperties schema (dict)",
    "additionalProperties false", "patternProperties", "minProperties/maxProperties", "default",
    "nested object", "if/then/else", "no properties",
)


def tool_shapes(input_schema: Any) -> set[str]:
    shapes: set[str] = set()
    for i, sub in enumerate(subschemas(input_schema)):
        shapes |= shapes_of(sub, root=i == 0)
    if isinstance(input_schema, dict) and not input_schema.get("properties"):
        shapes.add("no properties")
    return shapes


def main(folder: str) -> None:
    files = sorted(Path(folder).glob("*.tools.json"))
    per_shape: dict[str, list[int]] = {k: [0, 0] for k in KNOWN}
    total = 0
    print("| file | tools |")
    print("|---|---|")
    for f in files:
        tools = json.loads(f.read_text(encoding="utf-8"))["tools"]
        total += len(tools)
        print(f"| `{f.name}` | {len(tools)} |")
        seen_in_file: set[str] = set()
        for t in tools:
            for sh in tool_shapes(t.get("inputSchema")):
                per_shape.setdefault(sh, [0, 0])[0] += 1
                seen_in_file.add(sh)
        for sh in seen_in_file:
            per_shape[sh][1] += 1
    print(f"| **all {len(files)} files** | **{total}** |")
    print()
    print("| shape | tools | files |")
    print("|---|---|---|")
    for sh in sorted(per_shape, key=lambda k: (k.startswith("format: "), -per_shape[k][0], k)):
        tools_n, files_n = per_shape[sh]
        print(f"| {sh} | {tools_n} | {files_n} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fixtures/argument-schemas")
