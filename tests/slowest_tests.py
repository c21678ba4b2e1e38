#!/usr/bin/env python3
"""Prints the slowest tests of a ctest JUnit file (`ctest --output-junit FILE`) and the total,
so that `make test` says where its time goes. Usage: tests/slowest_tests.py FILE [N]"""
import sys
import xml.etree.ElementTree as ET

path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8
cases = [(float(c.get("time", 0)), c.get("name", "?")) for c in ET.parse(path).iter("testcase")]
cases.sort(reverse=True)
print(f"ctest: {len(cases)} tests, {sum(t for t, _ in cases):.0f} s of test time; the slowest:")
for t, name in cases[:n]:
    print(f"  {t:7.1f} s  {name}")
