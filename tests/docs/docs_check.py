#!/usr/bin/env python3
"""Reruns the commands behind the README's figures and fails on any that drifted.

A figure in README.md is checked by an HTML comment (invisible on the rendered page) just above
the paragraph or table that quotes it:

    <!-- docs-check: simulate -s zb-auto -p 8 -m 24 --mem-limit 1.5p => cost_ms=102.7 -->
    <!-- docs-check row="4 | 8": simulate ... => cost_ms=61.5 optimality_gap=4.88% -->

The words after `docs-check:` up to `=>` are ppsim's arguments (`--json` is added); each
`key=value` after it is a field of the JSON (`a.b` for nested fields, `NAME:key` for the row of
schedule NAME in compare's list) and the value as the README writes it. A check passes when
(1) the field, rounded to the decimals the value is written with (a trailing % means a fraction
shown in per cent), equals the value, and (2) the value is written in the block the comment
stands above (the next paragraph, table or fenced block of output; with row="CELLS", in the table row whose first cells
are CELLS; with col="HEADER" too, in that row's cell under HEADER). So a figure cannot drift from its command, nor the text from the figure.

    tests/docs/docs_check.py PPSIM README.md     exit 0: all hold; 1: a figure drifted; 2: usage
"""
import json
import re
import shlex
import subprocess
import sys
from decimal import ROUND_HALF_EVEN, Decimal

COMMENT = re.compile(r'^<!-- docs-check(?: row="(?P<row>[^"]*)")?(?: col="(?P<col>[^"]*)")?: '
                     r'(?P<body>.*?) -->\s*$')


def cells(line):
    return [c.strip() for c in line.strip().strip('|').split('|')]


def block_after(lines, i):
    """The lines of the paragraph or table under the comment at line i."""
    j = i + 1
    while j < len(lines) and (COMMENT.match(lines[j]) or not lines[j].strip()):
        j += 1
    block = []
    if j < len(lines) and lines[j].startswith('```'):  # a fenced block, blank lines and all
        block.append(lines[j])
        j += 1
        while j < len(lines) and not lines[j].startswith('```'):
            block.append(lines[j])
            j += 1
        return block
    while j < len(lines) and lines[j].strip():
        block.append(lines[j])
        j += 1
    return block


def field(doc, key):
    if ':' in key:
        name, key = key.split(':', 1)
        rows = [r for r in doc if isinstance(r, dict) and r.get('schedule') == name]
        if len(rows) != 1:
            raise KeyError(f'{len(rows)} rows of schedule {name!r}')
        doc = rows[0]
    for part in key.split('.'):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def as_written(measured, written):
    """The measured value rounded as the README writes `written`."""
    percent = written.endswith('%')
    digits = written.rstrip('%')
    places = len(digits.split('.')[1]) if '.' in digits else 0
    value = Decimal(repr(float(measured) * (100 if percent else 1)))
    text = str(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN))
    if text in ('-0', '-0.0') or re.fullmatch(r'-0\.0+', text):
        text = text[1:]
    return text + ('%' if percent else '')


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    ppsim, readme = argv[1], argv[2]
    lines = open(readme, encoding='utf-8').read().splitlines()
    checks = failed = 0
    cache = {}
    for i, line in enumerate(lines):
        if not line.startswith('<!-- docs-check'):
            continue
        m = COMMENT.match(line)
        where = f'{readme}:{i + 1}'
        if not m or '=>' not in m.group('body'):
            print(f'{where}: FAIL malformed docs-check comment: {line.strip()}')
            failed += 1
            continue
        args_text, expect_text = (s.strip() for s in m.group('body').split('=>', 1))
        args = shlex.split(args_text)
        if '--json' not in args:
            args.append('--json')
        block = block_after(lines, i)
        if m.group('row') is not None:
            want = [c.strip() for c in m.group('row').split('|')]
            rows = [r for r in block if r.lstrip().startswith('|') and cells(r)[:len(want)] == want]
            if len(rows) != 1:
                print(f'{where}: FAIL {len(rows)} rows of the table below start with | {m.group("row")} |')
                failed += 1
                continue
            text = rows[0]
            if m.group('col') is not None:
                head = cells(block[0])
                if m.group('col') not in head:
                    print(f'{where}: FAIL the table below has no column {m.group("col")!r}')
                    failed += 1
                    continue
                row = cells(text)
                k = head.index(m.group('col'))
                text = row[k] if k < len(row) else ''
        else:
            text = ' '.join(block)
        key = tuple(args)
        if key not in cache:
            r = subprocess.run([ppsim] + args, capture_output=True, text=True, timeout=600)
            cache[key] = (r.returncode, r.stdout, r.stderr)
        code, out, err = cache[key]
        try:
            doc = json.loads(out)
        except ValueError:
            print(f'{where}: FAIL ppsim {args_text} exited {code} without JSON: {err.strip()[:300]}')
            failed += 1
            continue
        for pair in expect_text.split():
            checks += 1
            name, _, written = pair.partition('=')
            try:
                got = as_written(field(doc, name), written)
            except (KeyError, IndexError, ValueError, TypeError) as e:
                print(f'{where}: FAIL {name}: not in the output of ppsim {args_text} ({e})')
                failed += 1
                continue
            # As a number of its own: 2.5 is not found in 12.5 or 2.56; "0.62 %" writes 0.62%.
            number = re.escape(written.rstrip('%')) + (r'\s?%' if written.endswith('%') else '')
            shown = re.search(r'(?<![\w.])' + number + r'(?![\w]|\.\d)', text) is not None
            if got != written:
                print(f'{where}: FAIL {name}: the README says {written}, ppsim {args_text} gives {got}')
                failed += 1
            elif not shown:
                print(f'{where}: FAIL {name}={written} holds but the text below does not write {written}')
                failed += 1
    print(f'docs-check: {checks} figures from {len(cache)} commands, {failed} drifted')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
