# Extracts the Butane configs of Flatcar's documentation (every fenced listing of
# content/docs/latest/**/*.md that begins "variant: flatcar") into PAGE-N.bu in OUTDIR.
# Run in a git directory of github.com/flatcar/flatcar-website:
#   python3 extract-flatcar.py OUTDIR > OUTDIR/SOURCES.tsv
import re, subprocess, sys
out = sys.argv[1]
git = lambda *a: subprocess.run(['git', '--git-dir=.'] + list(a), capture_output=True, text=True, check=True).stdout
commit = git('rev-parse', 'HEAD').strip()
print('commit\tpath\tline\tfile')
for path in sorted(git('ls-tree', '-r', '--name-only', 'HEAD', 'content/docs/latest/').split()):
    if not path.endswith('.md'):
        continue
    lines = git('show', 'HEAD:' + path).split('\n')
    n, i = 0, 0
    while i < len(lines):
        m = re.match(r'^(\s*)(```+|~~~+)', lines[i])
        if m and i + 1 < len(lines) and lines[i + 1].strip().startswith('variant: flatcar'):
            ind, fence = m.group(1), m.group(2)
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence):
                j += 1
            body = [l[len(ind):] if l.startswith(ind) else l.lstrip() for l in lines[i + 1:j]]
            n += 1
            name = '%s-%d.bu' % (re.sub(r'[^a-z0-9]+', '-', path[len('content/docs/latest/'):-3].lower()).strip('-'), n)
            open(out + '/' + name, 'w').write('\n'.join(body) + '\n')
            print('%s\t%s\t%d\t%s' % (commit, path, i + 2, name))
            i = j
        i += 1
