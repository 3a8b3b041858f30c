"""Lists functions longer than N lines (default 80) in the given Rust source trees.

usage: python3 tools/long_functions.py [--check] [N] DIR...
A function runs from its `fn` line to the closing brace at the same indentation;
unit-test files (tests.rs, `#[cfg(test)]` modules) are skipped. With --check (CI), exit 1
when a function other than the data tables in ALLOWED is over the limit."""
import os, re, sys

args = sys.argv[1:]
check = '--check' in args
args = [a for a in args if a != '--check']
# Data tables, not logic: (path suffix, function) and why.
ALLOWED = {
    ('crates/core/src/scenario/defaults.rs', 'default'): 'the default scenario, one field per line',
}
limit = int(args.pop(0)) if args and args[0].isdigit() else 80
rows = []
for root in args:
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith('.rs') or f == 'tests.rs':
                continue
            path = os.path.join(dirpath, f)
            lines = open(path).read().split('\n')
            cut = next((i for i, l in enumerate(lines) if l.startswith('#[cfg(test)]')), len(lines))
            for i, l in enumerate(lines[:cut]):
                m = re.match(r'^(\s*)(pub(\([a-z]+\))? )?(const )?fn (\w+)', l)
                if not m or l.rstrip().endswith(';'):
                    continue
                ind = m.group(1)
                for j in range(i + 1, cut):
                    if lines[j] == ind + '}':
                        n = j - i + 1
                        if n > limit:
                            rows.append((n, path, i + 1, m.group(5)))
                        break
for n, path, line, name in sorted(rows, reverse=True):
    print(f'{n:5} {path}:{line} {name}')
bad = [r for r in rows if not any(r[1].endswith(p) and r[3] == f for p, f in ALLOWED)]
if check and bad:
    print(f'{len(bad)} function(s) over {limit} lines (split them, or name a data table in ALLOWED)')
    sys.exit(1)
