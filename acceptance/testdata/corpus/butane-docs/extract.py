# Extracts the Butane configs of Butane's documentation (the fenced listing after each
# "<!-- butane-config -->" marker in docs/*.md) into PAGE-N.bu in OUTDIR.
# Run in a git directory of github.com/coreos/butane:
#   python3 extract-butane.py OUTDIR > OUTDIR/SOURCES.tsv
import re, subprocess, sys
out = sys.argv[1]
git = lambda *a: subprocess.run(['git', '--git-dir=.'] + list(a), capture_output=True, text=True, check=True).stdout
commit = git('rev-parse', 'HEAD').strip()
print('commit\tpath\tline\tfile')
for path in sorted(git('ls-tree', '--name-only', 'HEAD', 'docs/').split()):
    if not path.endswith('.md'):
        continue
    lines = git('show', 'HEAD:' + path).split('\n')
    n = 0
    for i, l in enumerate(lines):
        if l.strip() != '<!-- butane-config -->':
            continue
        k = i + 1
        while not lines[k].startswith('```'):
            k += 1
        j = k + 1
        while not lines[j].startswith('```'):
            j += 1
        n += 1
        name = '%s-%d.bu' % (path[5:-3], n)
        open(out + '/' + name, 'w').write('\n'.join(lines[k + 1:j]) + '\n')
        print('%s\t%s\t%d\t%s' % (commit, path, k + 2, name))
