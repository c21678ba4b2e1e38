"""Tests of tests/docs/docs_check.py: it passes a page whose figures hold and fails each way a
figure can drift (the value, the text, the row, the comment itself)."""
import os
import subprocess
import sys

CHECK = os.path.join(os.environ["PPSIM_SOURCE_DIR"], "tests/docs/docs_check.py")
ZB_H1 = "simulate -s zb-h1 -p 4 -m 8 --costs F=1,B=1,W=1"  # cost 27, bubble 11.11 %


def check(tmp_path, page):
    readme = tmp_path / "README.md"
    readme.write_text(page)
    r = subprocess.run([sys.executable, CHECK, os.environ["PPSIM"], str(readme)],
                       capture_output=True, text=True)
    return r.returncode, r.stdout


def test_figures_that_hold_pass(tmp_path):
    code, out = check(tmp_path, f"""
<!-- docs-check: {ZB_H1} => cost_ms=27 bubble_rate=11.11% -->
ZB-H1 takes 27 ms with a bubble of 11.11 %.

<!-- docs-check row="zb-h1" col="cost": {ZB_H1} => cost_ms=27.0 -->
| schedule | bubble | cost |
|---|---|---|
| zb-h1 | 27 | 27.0 |
""")
    assert code == 0, out
    assert "3 figures from 1 commands, 0 drifted" in out


def test_a_value_that_drifted_fails(tmp_path):
    code, out = check(tmp_path, f"<!-- docs-check: {ZB_H1} => cost_ms=26 -->\nIt takes 26 ms.\n")
    assert code == 1
    assert "the README says 26, ppsim " in out and "gives 27" in out


def test_text_that_does_not_write_the_figure_fails(tmp_path):
    # 27 holds, but the paragraph says 28 (or 127, which is not 27).
    code, out = check(tmp_path, f"<!-- docs-check: {ZB_H1} => cost_ms=27 -->\nIt takes 127 or 28 ms.\n")
    assert code == 1
    assert "does not write 27" in out


def test_the_wrong_cell_or_a_missing_row_fails(tmp_path):
    table = "| schedule | bubble | cost |\n|---|---|---|\n| zb-h1 | 27 | 30 |\n"
    code, out = check(tmp_path, f'<!-- docs-check row="zb-h1" col="cost": {ZB_H1} => cost_ms=27 -->\n' + table)
    assert code == 1 and "does not write 27" in out
    code, out = check(tmp_path, f'<!-- docs-check row="zb-h2": {ZB_H1} => cost_ms=27 -->\n' + table)
    assert code == 1 and "0 rows of the table below start with | zb-h2 |" in out
    code, out = check(tmp_path, f'<!-- docs-check row="zb-h1" col="time": {ZB_H1} => cost_ms=27 -->\n' + table)
    assert code == 1 and "no column 'time'" in out


def test_a_malformed_comment_or_field_or_command_fails(tmp_path):
    code, out = check(tmp_path, f"<!-- docs-check: {ZB_H1} cost_ms=27 -->\n27\n")
    assert code == 1 and "malformed docs-check comment" in out
    code, out = check(tmp_path, f"<!-- docs-check: {ZB_H1} => no_such_ms=27 -->\n27\n")
    assert code == 1 and "no_such_ms: not in the output" in out
    code, out = check(tmp_path, "<!-- docs-check: simulate -s nope -p 4 -m 8 => cost_ms=27 -->\n27\n")
    assert code == 1 and "without JSON" in out


def test_a_fenced_block_is_one_block_blank_lines_and_all(tmp_path):
    page = f"<!-- docs-check: {ZB_H1} => cost_ms=27 -->\n```\n$ ppsim simulate ...\n\ncost 27 ms\n```\n"
    code, out = check(tmp_path, page)
    assert code == 0, out
    code, out = check(tmp_path, page.replace("cost 27 ms", "cost 28 ms"))
    assert code == 1 and "does not write 27" in out
